// The messages between the supervisor (main thread) and an actor host (worker thread or inline).
// Everything here is plain data: it crosses the thread boundary by structured clone.

export type RunKind = 'chat' | 'search';

/** What a run hands back to a waiting non-streaming caller. */
export type RunResult =
  | { ok: true; value: unknown }
  | { ok: false; status: number; message: string };

export type ToHost =
  | { t: 'start'; runId: string; kind: RunKind; request: unknown }
  | { t: 'attach'; runId: string; subId: number }
  | { t: 'cancel'; runId: string; reason: string }
  /** The supervisor has seen the run's end: the host may forget the actor. */
  | { t: 'release'; runId: string };

/** One outbound item; a batch carries a host's items of one event-loop turn, in order. */
export type OutItem =
  | { t: 'frames'; runId: string; data: string; events: number }
  | { t: 'replay'; runId: string; subId: number; data: string; ended: boolean }
  | { t: 'end'; runId: string; result: RunResult }
  | { t: 'gone'; runId: string; subId: number };

export interface Batch {
  t: 'batch';
  items: OutItem[];
}
