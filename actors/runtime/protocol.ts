// The runtime's vocabulary: how runs end, and the messages between the supervisor (main thread) and an
// actor host (a worker thread, or inline). Everything that crosses a thread is plain data (structured
// clone). Nothing here knows HTTP: the HTTP layer maps outcomes to statuses in one table.

/** Why a run did not produce its value. */
export type RunOutcome =
  /** A run is already active for the key and the caller asked to be refused. */
  | 'busy'
  /** What the run needs (a chat, a search) does not exist (or went while it ran). */
  | 'not_found'
  /** The request cannot run as given (e.g. its provider is not configured). */
  | 'invalid'
  /** A service the run needs is not configured here (e.g. the search engine). */
  | 'unavailable'
  /** The process is at its limit of active runs. */
  | 'capacity'
  | 'shutting_down'
  /** The instance is draining (a SIGTERM came): new runs go to another instance. */
  | 'draining'
  /** The instance is saturated (its event loops run late): new runs would slow the running ones. */
  | 'overloaded'
  /** The user already has as many runs going as they may (cluster-wide). */
  | 'user_runs'
  /** The user's LlmCalls of this UTC day have used their daily token budget. */
  | 'user_tokens'
  /** The caller's user was deleted while the request was on its way (it had been authenticated before). */
  | 'unauthorized'
  | 'provider_timeout'
  | 'provider_rate_limited'
  | 'provider_error'
  /** The provider's circuit breaker is open and the run had no fallback left: retry later. */
  | 'provider_unavailable'
  /** The run's database could not be reached, or did not answer in time: retry soon. */
  | 'database_unavailable'
  /** Ended early by the runtime (shutdown, the only client of an unpersisted stream left). */
  | 'cancelled'
  /** Ended early because a user asked to stop it. */
  | 'stopped'
  | 'internal';

export interface RunFailure {
  ok: false;
  outcome: RunOutcome;
  message: string;
  /** How long to wait before trying again (a provider's retry-after, an open breaker), when known. */
  retryAfterMs?: number;
}

/** What a run hands back to a caller waiting for it. */
export type RunResult<V = unknown> = { ok: true; value: V } | RunFailure;

/**
 * One map from run kind to its request and value types, e.g.
 * `{ chat: { request: ChatRunRequest; value: ChatRunValue } }`. The runtime is generic over it.
 */
export type RunTypeMap = Record<string, { request: unknown; value: unknown }>;
export type KindOf<T extends RunTypeMap> = keyof T & string;

/**
 * Why a run is asked to end early. `stop` is a user's decision (the run ends with what it has, e.g. a
 * chat's partial answer); `shutdown`, `disconnect` and `fenced` (this instance lost the cluster) are
 * the runtime's. After `shutdown` or `fenced` a run keeps what streamed so far and ends with the
 * cancel's message as its `error`.
 */
export type CancelWhy = 'stop' | 'shutdown' | 'disconnect' | 'fenced';

/** Failures the runtime cannot hand to anyone are logged through this (pino in the service). */
export type RuntimeLog = (level: 'warn' | 'error', message: string, err?: unknown, runId?: string) => void;

export type ToHost =
  | { t: 'start'; runId: string; kind: string; request: unknown }
  | { t: 'attach'; runId: string; subId: number }
  | { t: 'cancel'; runId: string; why: CancelWhy; message: string }
  /** The supervisor has seen the run's end: the host may forget the actor. */
  | { t: 'release'; runId: string };

/** One outbound item; a batch carries a host's items of one event-loop turn, in order. */
export type OutItem =
  | { t: 'frames'; runId: string; data: string; events: number }
  | { t: 'replay'; runId: string; subId: number; data: string; ended: boolean }
  /** The replay for `subId` could not be built: that subscriber ends with an error frame. */
  | { t: 'replay_failed'; runId: string; subId: number; message: string }
  | { t: 'end'; runId: string; result: RunResult }
  | { t: 'gone'; runId: string; subId: number }
  /** A failure inside a host, logged by the supervisor (a worker has no logger of its own). */
  | { t: 'log'; level: 'warn' | 'error'; message: string; error: string | null; runId?: string };

/**
 * A batch's items as they cross the thread boundary. A run's frames, nearly every item, cross as
 * three plain values in a row (runId, data, events), not as an object: the structured clone of an
 * object with its keys costs ~4x that of its values (docs/performance.md, fifth round). Every other
 * item crosses as itself. A string always starts a frames item, since no other item is a string.
 */
export type BatchEntry = string | number | Exclude<OutItem, { t: 'frames' }>;

export interface Batch {
  t: 'batch';
  items: BatchEntry[];
  /**
   * Starts this host has settled since its last batch (taken up, or for a kind that settles its own
   * start, its first work done): the supervisor's count of unfinished starts (`startBacklog`) goes down by it.
   */
  started?: number;
  /** The sum of those starts' latencies on the host (ms from the actor's making to its settling): the admission's limit reads their mean. */
  startedMs?: number;
}

/** A batch's entries for a list of items (the ledger and tests build batches this way). */
export function encodeItems(items: readonly OutItem[]): BatchEntry[] {
  const out: BatchEntry[] = [];
  for (const item of items) {
    if (item.t === 'frames') out.push(item.runId, item.data, item.events);
    else out.push(item);
  }
  return out;
}

/** The items of a batch, in order (off the hot path: the supervisor reads the entries in place). */
export function batchItems(batch: Batch): OutItem[] {
  const out: OutItem[] = [];
  const e = batch.items;
  for (let i = 0; i < e.length; i++) {
    const entry = e[i]!;
    if (typeof entry === 'string') {
      out.push({ t: 'frames', runId: entry, data: e[i + 1] as string, events: e[i + 2] as number });
      i += 2;
    } else if (typeof entry === 'object') out.push(entry);
  }
  return out;
}
