// The registry of active runs as the routes see it: one interface, two implementations chosen once when the
// server assembles (src/app/app.ts). `LocalRuns` (here) is this process's supervisor; `ClusterRuns`
// (src/cluster/cluster-runs.ts), with REDIS_URL set, holds each run key (a chat, a search) by one run across
// every instance. What both keep (each owner's count of runs, deleted owners, what each run stored) is the
// RunLedger below. No route asks which one it has: `wouldStart` answers what a route needs to know.
import type { RunSupervisor, RunTypes } from '../../actors/runs.ts';
import type { KindOf } from '../../actors/runtime/protocol.ts';
import type { RunInfo, RunRegistry, Started, StartOptions, StartRefusal } from '../../actors/runtime/registry.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import type { LocalRunPort } from '../cluster/port.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';
import { linkToRun, runSpanStarted, startRunSpan, type TracedRequest } from '../telemetry/run-spans.ts';

export type Kind = KindOf<RunTypes>;

export type ActiveRunsScope = 'process' | 'cluster';

/**
 * The registry could not reach the cluster (Redis down, or the instance that owns the run does not
 * answer): the request may succeed if retried soon. The HTTP layer answers it with 503 and Retry-After.
 */
export class ClusterUnavailableError extends ServiceError {
  constructor(message: string, cause: unknown) {
    super(ErrorCodes.CLUSTER_UNAVAILABLE, message, { cause });
    this.name = 'ClusterUnavailableError';
  }
}

/** Where a user's refused start is counted (css_runs_refused_total). */
export interface UserRefusals {
  refusedForUser(reason: 'user_runs'): void;
}

/** The run registry of the service: this process's runs, or the cluster's. */
export interface Runs extends RunRegistry<RunTypes> {
  readonly supervisor: RunSupervisor;
  /** A user's stop of the run of `key`, here or on its instance: false when none runs. */
  stop(kind: Kind, key: string): Promise<boolean>;
  /** Ends the run of `key`, here or on its instance, with `message` as its error: false when none runs. */
  cancel(kind: Kind, key: string, message: string): Promise<boolean>;
  find(kind: Kind, key: string): Promise<RunInfo<Kind> | null>;
  /** `process`: this process's runs; `cluster`: every live instance's (this process's without a cluster). */
  list(scope: ActiveRunsScope): Promise<RunInfo<Kind>[]>;
  /** The user of a run another instance holds, when its instance wrote one beside the lease. */
  remoteUser(kind: Kind, key: string): Promise<string | undefined>;
  /**
   * True when a start of `key` here is known, synchronously, to start a new run rather than join one (so it
   * may be refused before its body is read); false when it would join, or when that cannot be known at once.
   */
  wouldStart(kind: Kind, key: string): boolean;
  /** A run ended (the supervisor's onEnd). */
  ended(run: RunInfo): void;
  /** A user was deleted (here or, through the cluster, elsewhere): their runs end, and none starts from now on. */
  ownerDeleted(owner: string, message: string): void;
  /** The ids of what `lost` (runs whose host died) had stored, to be recovered as a crash's are. */
  storedIds(lost: RunInfo[]): string[];
}

/** What the cluster serves other instances from: the supervisor's operations by key. */
export function localRunPort(supervisor: RunSupervisor): LocalRunPort {
  return {
    attach: (kind, key, sub) => {
      const attached = supervisor.attachNow(kind, key, sub) === true;
      if (attached) linkToRun(kind, key);
      return attached;
    },
    outcome: (kind, key) => supervisor.resultOf(kind, key),
    stop: (kind, key, reason, cancel) => endHere(supervisor, kind, key, reason, cancel === true),
    fence: (kind, key, message) => supervisor.cancelNow(kind, key, 'fenced', message),
  };
}

/** A stop (the run answers with what it has) or a cancel (it ends with `message` as its error), of a run here. */
export function endHere(supervisor: RunSupervisor, kind: string, key: string, message: string, cancel: boolean): boolean {
  return cancel ? supervisor.cancelNow(kind, key, 'fenced', message) : supervisor.stopNow(kind, key, message);
}

/**
 * What both registries keep of the runs started here: each owner's count (without a cluster the whole
 * count), the users deleted while this process runs, and what each run stored.
 */
export class RunLedger {
  /** Runs started here that count against their owner's limit: run id → owner. */
  private readonly counted = new Map<string, string>();
  /** Of those, how many each owner has. */
  private readonly perOwner = new Map<string, number>();
  /**
   * Users deleted while this process runs (ids are never reused): a request of theirs authenticated
   * before the deletion, still reading its body or asking the database, must not start a run after it.
   */
  private readonly deletedOwners = new Set<string>();
  /** Each run's stored state by the id it is found by (a chat run's LlmCall, a search): see storedIds. */
  private readonly storedAs = new Map<string, string>();

  constructor(
    readonly supervisor: RunSupervisor,
    private readonly refusals: UserRefusals | null,
  ) {}

  ownerDeleted(owner: string, message: string): void {
    this.deletedOwners.add(owner);
    this.supervisor.cancelOwned(owner, 'fenced', message);
  }

  /** Every start ends here, synchronously after its waits, so a deletion heard during them still counts. */
  spawn<K extends Kind>(opts: StartOptions<RunTypes, K>): Started<K, RunTypes[K]['value']> {
    if (opts.owner !== undefined && this.deletedOwners.has(opts.owner)) return { ok: false, outcome: 'unauthorized', message: 'unauthorized' };
    // Tracing: the run's span, its context carried by the request into the actor thread.
    const span = startRunSpan(opts.kind, opts.request as TracedRequest);
    const started = this.supervisor.start(opts);
    if (span !== null && started.ok) {
      if (started.handle.joined) linkToRun(opts.kind, started.handle.key ?? '');
      else runSpanStarted(span, started.handle, started.handle.result);
    }
    const stored = opts.kind === 'chat' ? (opts.request as RunTypes['chat']['request']).callId : opts.kind === 'search' ? opts.key : null;
    if (started.ok && !started.handle.joined && stored) this.storedAs.set(started.handle.runId, stored);
    return started;
  }

  storedIds(lost: RunInfo[]): string[] {
    return lost.flatMap((r) => this.storedAs.get(r.runId) ?? []);
  }

  /** How many counted runs `owner` has here. */
  countOf(owner: string): number {
    return this.perOwner.get(owner) ?? 0;
  }

  userRefusal(limit: number): StartRefusal {
    this.refusals?.refusedForUser('user_runs');
    return { ok: false, outcome: 'user_runs', message: `too many active runs for this user (limit ${limit})` };
  }

  count(runId: string, owner: string): void {
    this.counted.set(runId, owner);
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
  }

  /** The run ended: its stored id is forgotten, and the owner it counted against (if any) is returned. */
  ended(run: RunInfo): string | undefined {
    this.storedAs.delete(run.runId);
    const owner = this.counted.get(run.runId);
    if (owner === undefined) return undefined;
    this.counted.delete(run.runId);
    const left = (this.perOwner.get(owner) ?? 1) - 1;
    if (left > 0) this.perOwner.set(owner, left);
    else this.perOwner.delete(owner);
    return owner;
  }
}

/** What both registries are built on: the supervisor, and the ledger with the operations that are its alone. */
export abstract class LedgerRuns {
  readonly supervisor: RunSupervisor;
  protected readonly ledger: RunLedger;

  constructor(supervisor: RunSupervisor, refusals: UserRefusals | null) {
    this.supervisor = supervisor;
    this.ledger = new RunLedger(supervisor, refusals);
  }

  ownerDeleted(owner: string, message: string): void {
    this.ledger.ownerDeleted(owner, message);
  }

  storedIds(lost: RunInfo[]): string[] {
    return this.ledger.storedIds(lost);
  }
}

/** One process: every call is the supervisor's own, each owner's count checked and taken synchronously. */
export class LocalRuns extends LedgerRuns implements Runs {
  constructor(supervisor: RunSupervisor, refusals: UserRefusals | null = null) {
    super(supervisor, refusals);
  }

  start<K extends Kind>(opts: StartOptions<RunTypes, K>): Started<K, RunTypes[K]['value']> {
    if (opts.owner === undefined || opts.ownerLimit === undefined) return this.ledger.spawn(opts);
    const owner = opts.owner;
    const joining = opts.key !== null && this.supervisor.findNow(opts.kind, opts.key) !== null;
    if (!joining && opts.ifIdle) return opts.ifIdle;
    if (!joining && this.ledger.countOf(owner) >= opts.ownerLimit) return this.ledger.userRefusal(opts.ownerLimit);
    const started = this.ledger.spawn(opts);
    if (started.ok && !started.handle.joined) this.ledger.count(started.handle.runId, owner);
    return started;
  }

  ended(run: RunInfo): void {
    this.ledger.ended(run);
  }

  async attach(kind: Kind, key: string, subscriber: Subscriber): Promise<boolean | 'not_found'> {
    const here = this.supervisor.attachNow(kind, key, subscriber);
    if (here === true) linkToRun(kind, key);
    return here;
  }

  async stop(kind: Kind, key: string): Promise<boolean> {
    return endHere(this.supervisor, kind, key, 'stopped by request', false);
  }

  async cancel(kind: Kind, key: string, message: string): Promise<boolean> {
    return endHere(this.supervisor, kind, key, message, true);
  }

  async find(kind: Kind, key: string): Promise<RunInfo<Kind> | null> {
    return this.supervisor.findNow(kind, key);
  }

  async list(): Promise<RunInfo<Kind>[]> {
    return this.supervisor.listNow();
  }

  async remoteUser(): Promise<string | undefined> {
    return undefined;
  }

  wouldStart(kind: Kind, key: string): boolean {
    return this.supervisor.findNow(kind, key) === null;
  }
}
