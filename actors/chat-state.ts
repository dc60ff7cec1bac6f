// The chat run's state as data (chat-run.ts, the run's machine): what every state after the start
// shares (its Base) and each state's own. It is plain data (JSON keeps it whole): the provider session,
// the call's controller and the hold's timer are the runtime's, named here by handle, and a failed input
// keeps its cause, not the error (a run's snapshot, runtime/run-snapshot.ts).
import type { FallbackCalls, FallbackNote, ToolCallRequest, Usage } from '../src/providers/types.ts';
import type { RunDeps } from '../src/domain/run-deps.ts';
import type { ChatCommand, ChatMsg, ChatRunRequest, ChatRunValue } from './chat-protocol.ts';
import type { ToolSlot } from './chat-tools.ts';
import type { Handle, Io } from './runtime/actor.ts';
import type { RunFailure } from './runtime/protocol.ts';
import type { Gate } from './text-gate.ts';

/** What the run fixed at its start. */
export interface Run {
  readonly req: ChatRunRequest;
  /** The chat messages go to; null when nothing is stored. */
  readonly chatId: string | null;
  /** On the runtime's clock (io.now). */
  readonly started: number;
  /**
   * The provider call's and the tools' controller, by handle (io.newController): aborted when the run
   * fails, and with the run's signal on a stop or cancel (receive passes it on). One controller instead
   * of AbortSignal.any per run: any() is among the costliest parts of a start in Node 20 (a signal,
   * listeners and weak references each time).
   */
  readonly call: Handle;
  /** The names of the service's tools offered (io.deps.tools has them). */
  readonly tools: readonly string[];
  /** The provider session, by handle (io.open); null only when the run failed before it had one. */
  readonly session: Handle | null;
}

/**
 * The input and running LlmCall, as stored so far: a storage failure is the run's cause even when
 * it surfaces as an abort. `runToken` is the run's fencing token (sql/007_fencing.sql): its later
 * writes carry it.
 */
export type Input = { readonly at: 'pending' } | { readonly at: 'stored'; readonly runToken: number | null } | { readonly at: 'failed'; readonly cause: RunFailure };

/** The rounds so far: how many, their usage summed, the last one's raw end, a fallback taken (PROVIDER_FALLBACKS), and the client's calls that ended them. */
export interface Rounds {
  readonly n: number;
  readonly usage: Usage | null;
  readonly raw: unknown;
  readonly fallback?: FallbackNote;
  readonly fallbackCalls?: FallbackCalls;
  readonly clientCalls?: ToolCallRequest[];
}

export interface Base {
  readonly run: Run;
  readonly input: Input;
  readonly rounds: Rounds;
}

/** What waits for the input to be stored: the tool messages follow it, and so does the answer. */
export type Then = { then: 'tools'; calls: ToolCallRequest[] } | { then: 'answer' } | { then: 'stopped' };

export type Step = 'settle' | 'interrupt' | 'record';

export type ChatState =
  | { readonly s: 'idle'; readonly req: ChatRunRequest }
  | (Base & { readonly s: 'streaming'; readonly gate: Gate })
  | (Base & { readonly s: 'waiting'; readonly next: Then })
  | (Base & { readonly s: 'tools'; readonly slots: readonly ToolSlot[]; readonly left: number })
  | (Base & { readonly s: 'storing'; readonly stopped: boolean })
  | (Base & { readonly s: 'failing'; readonly failure: RunFailure; readonly step: Step })
  | { readonly s: 'ended' };

export type ChatIo = Io<ChatMsg, ChatRunValue, ChatCommand, RunDeps>;

export const PENDING: Input = { at: 'pending' };

/** A state's Base alone, so that the next state carries nothing of the one it leaves. */
export const baseOf = ({ run, input, rounds }: Base): Base => ({ run, input, rounds });

export const tokenOf = (input: Input): number | null => (input.at === 'stored' ? input.runToken : null);
