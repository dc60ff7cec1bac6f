// `top_p` and `stop` of an OpenAI request, passed to the provider that answers it (src/providers/): every
// provider takes `top_p`; `stop` goes to the Chat Completions providers as `stop` and to provider_b as
// `stop_sequences`, while provider_a's Responses API has no stop sequences, so a request that sets them
// there is refused rather than answered without them (docs/clients.md).
import { z } from 'zod';
import type { ChatRunRequest } from '../../actors/chat-run.ts';
import { invalidParam } from './errors.ts';
import type { ResolvedModel } from './models.ts';

/** OpenAI's range: 0 to 1. */
export const topPSchema = z.number().min(0).max(1).nullish();
/** OpenAI's: one sequence or up to 4 (read as a list either way). */
export const stopSchema = z
  .preprocess((v) => (typeof v === 'string' ? [v] : v), z.array(z.string().min(1, 'a stop sequence must not be empty'), 'must be a string or an array of up to 4 strings').max(4, 'at most 4 sequences'))
  .nullish();

/** Providers whose API has no stop sequences. */
const NO_STOP: ReadonlySet<string> = new Set(['provider_a']);

/** The run request's `topP` and `stop` (absent when not set); a 400 naming `stop` where its provider has none. */
export function samplingOf(body: { top_p?: number | null; stop?: string[] | null }, model: ResolvedModel): Pick<ChatRunRequest, 'topP' | 'stop'> {
  const stop = body.stop ?? undefined;
  if (stop !== undefined && stop.length > 0 && NO_STOP.has(model.provider)) {
    throw invalidParam('stop', `${model.provider} (model '${model.id}') has no stop sequences: remove stop, or use a model of another provider`);
  }
  return { ...(body.top_p != null && { topP: body.top_p }), ...(stop !== undefined && stop.length > 0 && { stop }) };
}
