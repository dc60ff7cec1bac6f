// The one interface every provider adapter implements. Adapters translate between the service's
// normalized messages/events and one provider's wire format through its official SDK. The tool
// loop lives in the chat actor (actors/chat-run.ts), not here: an adapter only runs rounds.
import type { Attachment } from '../types.ts';

export const PROVIDERS = ['provider_a', 'provider_b', 'provider_c', 'provider_d'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** A transcript message as the provider should see it (system prompt already prepended). */
export interface ProviderMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  name?: string | null;
  attachments?: Attachment[];
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
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

/** Normalized events of one round. Every round ends with exactly one `round_end`. */
export type ProviderEvent =
  | { type: 'text'; text: string }
  | {
      type: 'round_end';
      /** Empty when the model gave its final answer. */
      toolCalls: ToolCallRequest[];
      usage: Usage | null;
      /** Provider stop reason, as the provider named it. */
      finishReason: string | null;
      /** The provider's final response object (non-streaming) or a compact summary (streaming). */
      raw: unknown;
    };

export interface CompletionRequest {
  model: string;
  messages: ProviderMessage[];
  /** Empty array: no tool definitions are sent at all. */
  tools: ToolSpec[];
  temperature?: number;
  maxTokens?: number;
  /** true: use the provider's streaming call; false: its whole-response call. */
  stream: boolean;
  signal: AbortSignal;
}

/** One completion across rounds; the adapter keeps whatever per-provider state the rounds need. */
export interface ProviderSession {
  /** First call: null. Later calls: the results of the previous round's tool calls. */
  /**
   * With `onText`, the round's text goes to it synchronously, in order, and only `round_end` is
   * yielded: that saves the hot path a generator step and two promise hops per delta.
   */
  round(toolResults: ToolResultInput[] | null, onText?: (text: string) => void): AsyncIterable<ProviderEvent>;
}

export interface ProviderAdapter {
  readonly name: ProviderName;
  startSession(req: CompletionRequest): ProviderSession;
  /** Model ids, already filtered for what the adapter can call. */
  listModels(signal?: AbortSignal): Promise<string[]>;
}

/** A provider failure with a message fit to show the user and store on the LlmCall. */
export class ProviderError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ProviderError';
    this.status = status;
  }
}
