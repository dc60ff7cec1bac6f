// The one interface every provider adapter implements. Adapters translate between the service's
// normalized messages/events and one provider's wire format through its official SDK. The tool
// loop lives in the chat actor (actors/chat-run.ts), not here: an adapter only runs rounds.
import type { Attachment, ProviderName } from '../base/types.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

// The names are the spec's (src/base/types.ts); the adapters' types build on them, never the other way.
export { PROVIDERS, type ProviderName } from '../base/types.ts';

/** A transcript message as the provider should see it (system prompt already prepended). */
export interface ProviderMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  name?: string | null;
  attachments?: Attachment[];
  /** An assistant turn's function calls (an OpenAI client's history): sent back with their results. */
  toolCalls?: ToolCallRequest[];
  /** A tool message's answer to this call (Chat Completions `tool_call_id`, Responses `call_id`). */
  toolCallId?: string;
}

/** A service-managed tool offered to the model (JSON-schema parameters). */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A function call the model asked for in a round. */
export interface ToolCallRequest {
  /** The provider's call id (Responses `call_id`, Chat Completions `tool_calls[].id`). */
  callId: string;
  name: string;
  /** The raw JSON argument string as the model sent it. */
  arguments: string;
}

/** The result of one tool call, handed back to the adapter for the next round. */
export interface ToolResultInput {
  callId: string;
  name: string;
  output: string;
}

export interface Usage {
  /** Every input token, cached ones included. */
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Of inputTokens, read from the provider's prompt cache; set only when the provider reported some. */
  cacheReadTokens?: number;
  /** Of inputTokens, written to the provider's prompt cache (provider_b); set only when reported. */
  cacheWriteTokens?: number;
}

/** The spec's usage (inputTokens, outputTokens, totalTokens): what the API shows of a Usage. */
export function specUsage(u: Usage): Usage {
  return u.cacheReadTokens === undefined && u.cacheWriteTokens === undefined ? u : { inputTokens: u.inputTokens, outputTokens: u.outputTokens, totalTokens: u.totalTokens };
}

/** Two usages summed; null when neither was reported. */
export function addUsage(total: Usage | null, u: Usage | null): Usage | null {
  if (!u) return total;
  if (!total) return u;
  const sum: Usage = { inputTokens: total.inputTokens + u.inputTokens, outputTokens: total.outputTokens + u.outputTokens, totalTokens: total.totalTokens + u.totalTokens };
  const read = (total.cacheReadTokens ?? 0) + (u.cacheReadTokens ?? 0);
  const write = (total.cacheWriteTokens ?? 0) + (u.cacheWriteTokens ?? 0);
  if (read) sum.cacheReadTokens = read;
  if (write) sum.cacheWriteTokens = write;
  return sum;
}

/** `total` less `part` (never below 0): a run's usage without what an earlier model of its chain answered. */
export function usageLess(total: Usage, part: Usage): Usage {
  const less = (a: number, b: number) => Math.max(0, a - b);
  const out: Usage = { inputTokens: less(total.inputTokens, part.inputTokens), outputTokens: less(total.outputTokens, part.outputTokens), totalTokens: less(total.totalTokens, part.totalTokens) };
  const read = less(total.cacheReadTokens ?? 0, part.cacheReadTokens ?? 0);
  const write = less(total.cacheWriteTokens ?? 0, part.cacheWriteTokens ?? 0);
  if (read) out.cacheReadTokens = read;
  if (write) out.cacheWriteTokens = write;
  return out;
}

/** How a round ended. Its text went to the round's text callback, in order, before it resolved. */
export interface RoundEnd {
  /** Empty when the model gave its final answer. */
  toolCalls: ToolCallRequest[];
  usage: Usage | null;
  /** Provider stop reason, as the provider named it. */
  finishReason: string | null;
  /** The provider's final response object (non-streaming) or a compact summary (streaming). */
  raw: unknown;
  /** The round went on on another model than the session's (PROVIDER_FALLBACKS). */
  fallback?: FallbackNote;
  /** With `fallback`: the calls that failed before it and the model that answered, each an LlmCall of its own. */
  fallbackCalls?: FallbackCalls;
}

/**
 * A call of a fallback chain that failed, `ms` after it began. The failed round reports no usage: the
 * providers report it at a stream's end (Chat Completions' last chunk, the Responses' `response.completed`),
 * so a call that failed told none that the adapters keep. `usage`: of the earlier rounds this model
 * answered (a later round fell back), when they reported any.
 */
export interface FailedCall {
  provider: ProviderName;
  model: string;
  error: string;
  ms: number;
  usage?: Usage;
}

/** The calls of a round that fell back: those that failed, first first, then the model that answered. */
export interface FallbackCalls {
  failed: FailedCall[];
  provider: ProviderName;
  model: string;
}

/** A run that went on on another model: `from` and `to` are `provider/model`, `reason` the failure's message. */
export interface FallbackNote {
  from: string;
  to: string;
  reason: string;
}

/** Where a round's text goes: called synchronously, in order, with no await per delta. */
export type TextSink = (text: string) => void;

/**
 * What the wire tells about a streamed round before it ends, so the chat run need not hold its text
 * for tool calls any longer than that: `tool_call`, the provider began a tool call (the round has
 * calls); `text_end`, the round's text is complete and no tool call follows it (it is the answer).
 */
export type RoundHint = 'tool_call' | 'text_end';
export type HintSink = (hint: RoundHint) => void;

export interface CompletionRequest {
  model: string;
  messages: ProviderMessage[];
  /** Empty array: no tool definitions are sent at all. */
  tools: ToolSpec[];
  temperature?: number;
  /** Nucleus sampling (`top_p`). */
  topP?: number;
  /** Sequences whose appearance ends the answer (provider_a's Responses API has none). */
  stop?: string[];
  maxTokens?: number;
  /** true: use the provider's streaming call; false: its whole-response call. */
  stream: boolean;
  signal: AbortSignal;
}

/** One completion across rounds; the adapter keeps whatever per-provider state the rounds need. */
export interface ProviderSession {
  /**
   * One round. First call: null; later calls: the results of the previous round's tool calls. Text
   * goes to `onText` as it arrives; the promise resolves with the round's end, or rejects with a
   * ProviderError (an abort is one whose name is `AbortError`). `onHint`, when given, hears what the
   * stream tells early (adapters that cannot tell say nothing; the round's end always decides).
   */
  round(toolResults: ToolResultInput[] | null, onText: TextSink, onHint?: HintSink): Promise<RoundEnd>;
}

export interface ProviderAdapter {
  readonly name: ProviderName;
  startSession(req: CompletionRequest): ProviderSession;
  /**
   * Model ids, already filtered for what the adapter can call. An adapter with a configured model
   * (provider_d) answers a failed listing with it, unless `fallback` is false.
   */
  listModels(signal?: AbortSignal, opts?: { fallback?: boolean }): Promise<string[]>;
}

/**
 * A provider failure with a message fit to show the user and store on the LlmCall. `timedOut` is set
 * where the timeout is detected (the SDK's timeout, undici's header/body timeouts, a 408), so callers
 * classify it without reading the message.
 */
export class ProviderError extends ServiceError {
  readonly status: number | undefined;
  readonly timedOut: boolean;
  /** The call never got a whole answer through (a reset, a cut stream, an in-stream error): worth another try. */
  readonly transient: boolean;
  /** What the provider asked to wait before another call (`retry-after-ms`, else `retry-after`). */
  readonly retryAfterMs: number | undefined;
  constructor(message: string, status?: number, options?: { cause?: unknown; timedOut?: boolean; transient?: boolean; retryAfterMs?: number }) {
    super(ErrorCodes.PROVIDER, message, options);
    this.name = 'ProviderError';
    this.status = status;
    this.timedOut = options?.timedOut === true || status === 408;
    this.transient = options?.transient === true || this.timedOut;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * A provider refused without a call: its circuit breaker is open (src/providers/resilience/breaker.ts)
 * and the run has no fallback left. The client gets 503 with Retry-After, the time the breaker stays open.
 */
export class ProviderUnavailableError extends ProviderError {
  constructor(provider: ProviderName, retryAfterMs: number) {
    super(`${provider} is unavailable, retry later`, 503, { retryAfterMs });
    this.name = 'ProviderUnavailableError';
  }
}
