// The registry of active runs, as an interface: src/service/runs.ts implements it on the supervisor (the
// in-process core) and, with REDIS_URL, keeps the same promises across instances. Callers never see
// threads, hosts or instances: they start a run by kind and key, and attach, stop and list by key.
import type { KindOf, RunOutcome, RunResult, RunTypeMap } from './protocol.ts';
import type { Subscriber } from './subscriber.ts';

/** What is known of an active run wherever it runs. */
export interface RunInfo<K extends string = string> {
  readonly runId: string;
  readonly kind: K;
  /** chatId or searchId when the run holds one; null for a run nobody can find again. */
  readonly key: string | null;
  /** A label for metrics (the provider, or the engine). */
  readonly label: string;
  /** Epoch milliseconds. */
  readonly startedAt: number;
  /** The user the run works for (absent: not known here, e.g. a run on another instance). */
  readonly owner?: string;
}

export interface RunHandle<K extends string, V> extends RunInfo<K> {
  /** True when the call joined a run that was already going (`ifRunning: 'join'`). */
  readonly joined: boolean;
  /** Settles once, with the run's value or its failure; never rejects. */
  readonly result: Promise<RunResult<V>>;
}

/** Why a start did not happen. */
export interface StartRefusal {
  ok: false;
  outcome: Extract<RunOutcome, 'busy' | 'invalid' | 'capacity' | 'shutting_down' | 'draining' | 'overloaded' | 'user_runs' | 'user_tokens' | 'unauthorized'>;
  message: string;
}

export type Started<K extends string, V> = { ok: true; handle: RunHandle<K, V> } | StartRefusal;

export interface StartOptions<T extends RunTypeMap, K extends KindOf<T>> {
  kind: K;
  /** At most one run per (kind, key) is active; null: no key, the run can never be found again. */
  key: string | null;
  request: T[K]['request'];
  /** A run already active for the key: `reject` refuses with `busy`; `join` hands back its handle. */
  ifRunning: 'reject' | 'join';
  /**
   * No run is active for the key: refuse with this instead of starting one. For a request that can
   * join a run but could not start one (a search run body without the query the running run was given).
   */
  ifIdle?: StartRefusal;
  /**
   * Receives the run's frames: every frame from the start for a new run; the replay, then live,
   * when joining. It is ended after the terminal frame.
   */
  subscriber?: Subscriber;
  label?: string;
  /** The user the run works for: lists and deletions find a user's runs by it. */
  owner?: string;
  /** Runs the owner may have going at once, cluster-wide (absent: no limit, e.g. the admin). */
  ownerLimit?: number;
  /** Cancel (`disconnect`) when the last subscriber leaves: nobody could ever attach again. */
  cancelWhenAlone?: boolean;
}

export interface RunRegistry<T extends RunTypeMap> {
  /**
   * Starts a run, or refuses, or joins, in one step. Guarantees: for a key, two starts can never both
   * start a run, however close together (the in-process registry decides synchronously, before
   * returning; a cluster one by a lease on the key); with `join`, a caller either starts the run or
   * gets the running one's handle, never neither.
   */
  start<K extends KindOf<T>>(opts: StartOptions<T, K>): Started<K, T[K]['value']> | Promise<Started<K, T[K]['value']>>;
  /**
   * Replay then live: `subscriber` receives everything the run has emitted so far (deltas coalesced,
   * keyed events at their latest state), then every later frame, nothing lost or doubled, and is ended
   * after the terminal frame. If the run has just ended it gets the whole replay and is ended at once.
   * A replay that fails ends the subscriber with an `error` frame. `not_found`: no active run for
   * the key (the subscriber is left untouched); false: the subscriber closed before the replay.
   */
  attach(kind: KindOf<T>, key: string, subscriber: Subscriber): Promise<boolean | 'not_found'>;
  /**
   * A user's stop: the run is asked to end early with `why` = `stop` (it ends with what it has).
   * False when no run is active for the key. Resolves when asked, not when the run has ended.
   */
  stop(kind: KindOf<T>, key: string): Promise<boolean>;
  /** The active runs: `process` this process's, `cluster` every instance's (the same list without a cluster). */
  list(scope: 'process' | 'cluster'): Promise<RunInfo<KindOf<T>>[]>;
  /** The active run for the key, or null. */
  find(kind: KindOf<T>, key: string): Promise<RunInfo<KindOf<T>> | null>;
}
