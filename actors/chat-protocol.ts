// The chat run's protocol: its request and value, every message it receives besides the runtime's
// own, and every command (I/O) its receive can start. The compiler holds receive and the executor to it.
import type { FallbackCalls, FallbackNote, ProviderName, RoundEnd, RoundHint, ToolCallRequest, ToolResultInput, ToolSpec, Usage } from '../src/providers/types.ts';
import type { NewMessage } from '../src/store/messages.ts';
import type { Handle } from './runtime/actor.ts';
import type { ToolCommand, ToolDone } from './chat-tools.ts';
import type { ChatStorageRequest, UnsplitCalls } from './run-storage.ts';
import type { HoldExpired } from './text-gate.ts';

export interface ChatRunRequest extends ChatStorageRequest {
  /** `stream` uses the provider's streaming call; `whole` its whole-response call (for `raw`). */
  mode: 'stream' | 'whole';
  /** The chat's stored settings, as the route read them (existing chats only). */
  stored?: { additionalSystemPrompt: string | null; enabledTools: string[] };
  additionalSystemPrompt?: string | null;
  enabledTools?: string[];
  temperature?: number;
  /** Passed to the provider as they are (CompletionRequest): the OpenAI-compatible API's `top_p` and `stop`. */
  topP?: number;
  stop?: string[];
  maxTokens?: number;
  /** The W3C traceparent of the run's span (tracing on: src/telemetry/run-spans.ts sets it). */
  traceparent?: string;
  /** A takeover: the traceparent of the lost run's span, which this run's span links to. */
  continues?: string;
  /**
   * Functions an OpenAI client declared (src/openai/): offered to the model beside the service's tools,
   * and a round that calls one ends the run with the calls for the client to run (ChatRunValue.toolCalls).
   */
  clientTools?: ToolSpec[];
  /** Its replay sends each delta as it was (the OpenAI-compatible API numbers them for resume). */
  keepDeltas?: boolean;
}

export interface ChatRunValue {
  chatId: string | null;
  callId: string | null;
  provider: ProviderName;
  model: string;
  text: string;
  usage: Usage | null;
  /** USD under MODEL_PRICES (null: no usage or no price): what an unpersisted run adds to its user's day. */
  cost?: number | null;
  raw: unknown;
  /** A user stopped the run: `text` is the partial answer. */
  stopped: boolean;
  /** The client's functions the model called last (ChatRunRequest.clientTools): the run ended to hand them over. */
  toolCalls?: ToolCallRequest[];
  /** Each streamed delta's length (ChatRunRequest.keepDeltas): how the stored text replays as it was streamed. */
  deltas?: number[];
}

/** Every input of a chat run besides the runtime's own (start, stop, cancel, attach). */
export type ChatMsg =
  /** The input is stored; `runToken` is the run's fencing token for its later writes (null: no chat). */
  | { t: 'prepared'; runToken: number | null }
  | { t: 'prepare_failed'; error: unknown }
  | { t: 'text'; round: number; text: string }
  /** What the provider's stream told before the round's end (src/providers/types.ts). */
  | { t: 'round_hint'; round: number; hint: RoundHint }
  | HoldExpired
  | { t: 'round_end'; round: number; end: RoundEnd }
  | { t: 'round_failed'; round: number; error: unknown }
  | ToolDone
  | { t: 'tool_stored'; round: number; index: number }
  | { t: 'tool_store_failed'; round: number; index: number; error: unknown }
  /** `unsplit`: the answer is stored, but its fallback calls could not be split into their LlmCalls. */
  | { t: 'answer_stored'; unsplit?: UnsplitCalls }
  | { t: 'answer_store_failed'; error: unknown }
  | { t: 'interrupted_stored'; error: unknown }
  | { t: 'call_failed' };

export type ChatCommand =
  /** The chat and the running LlmCall, before the answer (run-storage.ts). */
  | { c: 'prepare'; req: ChatRunRequest }
  /**
   * `session`: the run's provider session, by its handle (the runtime keeps it: RunHandle.resource);
   * `call`: the controller whose signal the session's calls carry (a retry is noted on the round's span by it).
   */
  | { c: 'round'; session: Handle; call: Handle; round: number; results: ToolResultInput[] | null }
  | ToolCommand
  | { c: 'store_tool'; round: number; index: number; chatId: string; owner: string; message: NewMessage; runToken: number | null }
  /**
   * `fallback`: the answer came (partly) from a fallback model, kept as the message's metadata.fallback;
   * `fallbackCalls`: the calls that failed and the model that answered (`model`), each stored as its own LlmCall.
   */
  | { c: 'store_answer'; callId: string; chatId: string | null; model: string; text: string; usage: Usage | null; started: number; stopped: boolean; runToken: number | null; fallback?: FallbackNote; fallbackCalls?: FallbackCalls }
  /** The text streamed before a shutdown or fencing cut, kept as the assistant message, the LlmCall failed. */
  | { c: 'store_interrupted'; callId: string; chatId: string; model: string; text: string; usage: Usage | null; started: number; error: string; runToken: number | null; reason?: string }
  /** `usage`: of the rounds that completed before the failure (the provider was paid for them). */
  | { c: 'fail_call'; callId: string; model: string; error: string; started: number; usage: Usage | null };
