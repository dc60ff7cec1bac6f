// What the runtime really carries for one short chat run of the bench's request (one delta): the
// ChatRunRequest the stream route builds, the frames the chat actor emits, the end it sends and the
// messages and batches that cross between the supervisor and an actor thread (actors/runtime/protocol.ts).
import { randomUUID } from 'node:crypto';
import type { ChatRunRequest, ChatRunValue } from '../../actors/chat-protocol.ts';
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';
import { encodeItems, type Batch, type OutItem, type RunResult, type ToHost } from '../../actors/runtime/protocol.ts';
import { createProviders } from '../../src/providers/index.ts';
import type { ProviderAdapter, RoundEnd } from '../../src/providers/types.ts';
import { streamCompletionSchema } from '../../src/domain/schemas.ts';
import { serviceBody } from '../load/bodies.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

/** The service's provider_c adapter as it builds it (the openai client on the service's fetch), toward `baseUrl`. */
export function providerC(baseUrl: string): ProviderAdapter {
  return createProviders({ PROVIDER_TIMEOUT_MS: 120_000, AGENT_PROVIDER_API_BASE_URL: '', PROVIDER_C_API_KEY: 'k', PROVIDER_C_BASE_URL: baseUrl }).get('provider_c')!;
}

/** The one delta's text (a stamped simulator delta). */
export const TEXT = '1764069999123.456|';
const USAGE = { inputTokens: 3, outputTokens: 1, totalTokens: 4 };

/** How the Chat Completions adapter ends a streamed round (src/providers/chat-completions.ts). */
export const ROUND_END: RoundEnd = {
  toolCalls: [],
  usage: USAGE,
  finishReason: 'stop',
  raw: { id: 'chatcmpl-1', model: 'm', finishReason: 'stop', usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 } },
};

/** The request POST /v1/chat-completions/stream builds for the bench's body (runRequest in src/routes/completions.ts). */
export function chatRequest(persist: boolean): ChatRunRequest {
  const body = streamCompletionSchema.parse(JSON.parse(serviceBody('provider_c', persist, 1, 1).replace('__I__', '1')));
  const { provider, model, messages, additionalSystemPrompt, enabledTools, temperature, maxTokens } = body;
  const chatId = persist ? randomUUID() : null;
  const fields = { owner: ADMIN_USER_ID, mode: 'stream' as const, chatId, createChat: persist, storeChat: persist, stored: undefined };
  return { ...fields, callId: persist ? randomUUID() : null, provider, model, messages, additionalSystemPrompt, enabledTools, temperature, maxTokens };
}

/** The frames the chat actor emits for the run: meta, the delta, done (actors/chat-run.ts). */
export function runFrames(req: ChatRunRequest): string[] {
  const { chatId, callId, provider, model } = req;
  return [
    sseFrame('meta', { type: 'meta', chatId: req.storeChat ? chatId : null, callId, provider, model }),
    deltaFrame(TEXT),
    sseFrame('done', { type: 'done', text: TEXT, usage: USAGE }),
  ];
}

export function chatResult(req: ChatRunRequest): RunResult<ChatRunValue> {
  const { chatId, callId, provider, model } = req;
  return { ok: true, value: { chatId: req.storeChat ? chatId : null, callId, provider, model, text: TEXT, usage: { ...USAGE }, raw: ROUND_END.raw, stopped: false } };
}

/** The supervisor's start of the run, as hosts.ts hands it to a worker (one array per event-loop turn). */
export const startMessage = (runId: string, request: ChatRunRequest): ToHost => ({ t: 'start', runId, kind: 'chat', request });

export const framesItem = (runId: string, frames: readonly string[]): OutItem => ({ t: 'frames', runId, data: frames.join(''), events: frames.length });

/** One outbox batch of `items`. */
export const batch = (...items: OutItem[]): Batch => ({ t: 'batch', items: encodeItems(items) });
