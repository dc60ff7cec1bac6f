// Codecs for what runs hand back, one per run kind's value, next to the kinds' types: JSON that comes
// back from Postgres or Redis (a run result another instance sent, a recorded outcome) is validated on
// the way in instead of cast. Each schema `satisfies` its TypeScript type, so a field added to a value
// and not here fails the typecheck.
import { z } from 'zod';
import { chatSummary, searchDetail, usage } from '../src/domain/resources.ts';
import { providerSchema } from '../src/domain/schemas.ts';
import type { ChatRunValue } from './chat-run.ts';
import type { RunKind, RunTypes } from './runs.ts';
import type { RunFailure, RunOutcome, RunResult } from './runtime/protocol.ts';
import type { SearchRunValue } from './search-run.ts';
import type { TitleRunValue } from './title-run.ts';
import { ErrorCodes, ServiceError } from '../src/base/errors.ts';

export const chatRunValue = z.object({
  chatId: z.string().nullable(),
  callId: z.string().nullable(),
  provider: providerSchema,
  model: z.string(),
  text: z.string(),
  usage: usage.nullable(),
  cost: z.number().nullable().optional(),
  raw: z.unknown(),
  stopped: z.boolean(),
}) satisfies z.ZodType<ChatRunValue>;

export const searchRunValue = z.object({ search: searchDetail }) satisfies z.ZodType<SearchRunValue>;

export const titleRunValue = z.object({ chat: chatSummary }) satisfies z.ZodType<TitleRunValue>;

/** One codec per run kind: adding a kind to RunTypes without its codec fails the typecheck. */
export const RUN_VALUES: { [K in RunKind]: z.ZodType<RunTypes[K]['value']> } = {
  chat: chatRunValue,
  search: searchRunValue,
  title: titleRunValue,
};

// Keyed by outcome so that an outcome added to RunOutcome and not here fails the typecheck.
const OUTCOMES: Record<RunOutcome, true> = {
  user_runs: true,
  user_tokens: true,
  unauthorized: true,
  busy: true,
  not_found: true,
  invalid: true,
  unavailable: true,
  capacity: true,
  shutting_down: true,
  draining: true,
  overloaded: true,
  provider_timeout: true,
  provider_rate_limited: true,
  provider_error: true,
  provider_unavailable: true,
  database_unavailable: true,
  cancelled: true,
  stopped: true,
  internal: true,
};

export const runFailure = z.object({
  ok: z.literal(false),
  outcome: z.enum(Object.keys(OUTCOMES) as [RunOutcome, ...RunOutcome[]]),
  message: z.string(),
  retryAfterMs: z.number().nonnegative().optional(),
}) satisfies z.ZodType<RunFailure>;

/** The codec of a RunResult whose value is `value`'s. */
export function runResult<V>(value: z.ZodType<V>): z.ZodType<RunResult<V>> {
  return z.union([z.object({ ok: z.literal(true), value }), runFailure]);
}

/** JSON that did not decode as the result it should be: a bug or a version skew, never user input. */
export class RunResultDecodeError extends ServiceError {
  constructor(kind: string, issues: string) {
    super(ErrorCodes.RUN_RESULT_DECODE, `a ${kind} run result did not decode: ${issues}`);
    this.name = 'RunResultDecodeError';
  }
}

/** A run result of `kind` from JSON (Redis, Postgres); throws RunResultDecodeError when it is not one. */
export function decodeRunResult<K extends RunKind>(kind: K, json: unknown): RunResult<RunTypes[K]['value']> {
  const parsed = runResult(RUN_VALUES[kind]).safeParse(json);
  if (!parsed.success) throw new RunResultDecodeError(kind, z.prettifyError(parsed.error));
  return parsed.data;
}
