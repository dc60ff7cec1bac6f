// The registry of active runs as the routes see it: this process's supervisor, and with REDIS_URL
// set the cluster too, so a run key (a chat, a search) is held by one run across every instance.
// A start first looks here (synchronously), then takes the key's lease in Redis (two instances:
// Redis picks one), and only then starts the run here. Attach, wait and stop go to the run wherever
// it lives. Without a cluster every call is the supervisor's own.
import { decodeRunResult } from '../actors/results.ts';
import type { RunSupervisor, RunTypes } from '../actors/runs.ts';
import type { KindOf, RunResult } from '../actors/runtime/protocol.ts';
import type { RunHandle, RunInfo, RunRegistry, Started, StartOptions, StartRefusal } from '../actors/runtime/registry.ts';
import type { Subscriber } from '../actors/runtime/subscriber.ts';
import { OwnerUnreachableError, type Cluster } from './cluster/cluster.ts';
import type { LocalRunPort } from './cluster/port.ts';
import { RedisUnavailableError } from './cluster/redis.ts';
import { ErrorCodes, ServiceError } from './errors.ts';
import { linkToRun, runSpanStarted, startRunSpan, type TracedRequest } from './telemetry/run-spans.ts';

type Kind = KindOf<RunTypes>;

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

/** Cluster failures as the registry's own error; anything else is left as it is. */
function clusterFailure(err: unknown): unknown {
  if (err instanceof RedisUnavailableError) return new ClusterUnavailableError(`${err.message}; retry when Redis is back`, err);
  if (err instanceof OwnerUnreachableError) return new ClusterUnavailableError(err.message, err);
  return err;
}

function guarded<T>(p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => {
    throw clusterFailure(err);
  });
}

const busy = (kind: string, key: string): StartRefusal => ({ ok: false, outcome: 'busy', message: `a ${kind} run is already active for ${key}` });

/** Where a user's refused start is counted (css_runs_refused_total). */
export interface UserRefusals {
  refusedForUser(reason: 'user_runs'): void;
}

/** What is known of a run on another instance. */
const remoteInfo = <K extends Kind>(kind: K, key: string): RunInfo<K> => ({ runId: '', kind, key, label: '', startedAt: 0 });

export class Runs implements RunRegistry<RunTypes> {
  readonly supervisor: RunSupervisor;
  private cluster: Cluster | null = null;
  /** Keys whose lease this instance is taking: other starts, attaches and joins wait for the outcome. */
  private readonly starting = new Map<string, Promise<void>>();
  /** Runs started here that count against their owner's limit: run id → owner. */
  private readonly counted = new Map<string, string>();
  /** Of those, how many each owner has (without a cluster this is the whole count). */
  private readonly perOwner = new Map<string, number>();
  private readonly refusals: UserRefusals | null;
  /**
   * Users deleted while this process runs (ids are never reused): a request of theirs authenticated
   * before the deletion, still reading its body or asking the database, must not start a run after it.
   */
  private readonly deletedOwners = new Set<string>();
  /** Each run's stored state by the id it is found by (a chat run's LlmCall, a search): see storedIds. */
  private readonly storedAs = new Map<string, string>();

  constructor(supervisor: RunSupervisor, refusals: UserRefusals | null = null) {
    this.supervisor = supervisor;
    this.refusals = refusals;
  }

  /** A user was deleted (here or, through the cluster, elsewhere): their runs end, and none starts from now on. */
  ownerDeleted(owner: string, message: string): void {
    this.deletedOwners.add(owner);
    this.supervisor.cancelOwned(owner, 'fenced', message);
  }

  /** Every start ends here, synchronously after its waits, so a deletion heard during them still counts. */
  private spawn<K extends Kind>(opts: StartOptions<RunTypes, K>): Started<K, RunTypes[K]['value']> {
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

  /** The ids of what `lost` (runs whose host died) had stored, to be recovered as a crash's are. */
  storedIds(lost: RunInfo[]): string[] {
    return lost.flatMap((r) => this.storedAs.get(r.runId) ?? []);
  }

  /** Cluster mode: from now on run keys are held cluster-wide. */
  useCluster(cluster: Cluster): void {
    this.cluster = cluster;
  }

  get clustered(): boolean {
    return this.cluster !== null;
  }

  /** What the cluster serves other instances from: the supervisor's operations by key. */
  readonly localPort: LocalRunPort = {
    attach: (kind, key, sub) => {
      const attached = this.supervisor.attachNow(kind, key, sub) === true;
      if (attached) linkToRun(kind, key);
      return attached;
    },
    outcome: (kind, key) => this.supervisor.resultOf(kind, key),
    stop: (kind, key, reason, cancel) => this.endHere(kind, key, reason, cancel === true),
    fence: (kind, key, message) => this.supervisor.cancelNow(kind, key, 'fenced', message),
  };

  start<K extends Kind>(opts: StartOptions<RunTypes, K>): Started<K, RunTypes[K]['value']> | Promise<Started<K, RunTypes[K]['value']>> {
    const limited = opts.owner !== undefined && opts.ownerLimit !== undefined;
    if (!this.cluster) return limited ? this.startCounted(opts) : this.spawn(opts);
    if (opts.key !== null) return this.startClustered(this.cluster, opts, opts.key);
    return limited ? this.startClusterCounted(this.cluster, opts, () => this.spawn(opts)) : this.spawn(opts);
  }

  /** One process: the owner's count is this process's, checked and taken synchronously. */
  private startCounted<K extends Kind>(opts: StartOptions<RunTypes, K>): Started<K, RunTypes[K]['value']> {
    const owner = opts.owner!;
    const joining = opts.key !== null && this.supervisor.findNow(opts.kind, opts.key) !== null;
    if (!joining && opts.ifIdle) return opts.ifIdle;
    if (!joining && (this.perOwner.get(owner) ?? 0) >= opts.ownerLimit!) return this.userRefusal(opts.ownerLimit!);
    const started = this.spawn(opts);
    if (started.ok && !started.handle.joined) this.count(started.handle.runId, owner);
    return started;
  }

  /** A cluster: one of the owner's slots is taken in Redis before the run starts, given back if it does not. */
  private async startClusterCounted<K extends Kind>(
    cluster: Cluster,
    opts: StartOptions<RunTypes, K>,
    start: () => Started<K, RunTypes[K]['value']> | Promise<Started<K, RunTypes[K]['value']>>,
  ): Promise<Started<K, RunTypes[K]['value']>> {
    const owner = opts.owner!;
    if (!(await guarded(cluster.userRuns.claim(owner, opts.ownerLimit!)))) return this.userRefusal(opts.ownerLimit!);
    let started: Started<K, RunTypes[K]['value']>;
    try {
      started = await start();
    } catch (err) {
      cluster.userRuns.release(owner);
      throw err;
    }
    if (started.ok && !started.handle.joined && started.handle.runId !== '') this.count(started.handle.runId, owner);
    else cluster.userRuns.release(owner);
    return started;
  }

  private userRefusal(limit: number): StartRefusal {
    this.refusals?.refusedForUser('user_runs');
    return { ok: false, outcome: 'user_runs', message: `too many active runs for this user (limit ${limit})` };
  }

  private count(runId: string, owner: string): void {
    this.counted.set(runId, owner);
    this.perOwner.set(owner, (this.perOwner.get(owner) ?? 0) + 1);
  }

  private async startClustered<K extends Kind>(cluster: Cluster, opts: StartOptions<RunTypes, K>, key: string): Promise<Started<K, RunTypes[K]['value']>> {
    const { kind } = opts;
    const member = `${kind}:${key}`;
    // A lost race means another run holds the key now: join it (it may end at once, then start ours).
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.starting.get(member);
      if (this.supervisor.findNow(kind, key)) return this.spawn(opts);
      const owner = await this.remoteOwner(kind, key);
      if (owner) {
        if (opts.ifRunning === 'reject') return busy(kind, key);
        const joined = await this.joinRemote(opts, key, owner);
        if (joined) return { ok: true, handle: joined };
        continue;
      }
      if (this.starting.has(member)) continue;
      if (opts.ifIdle) return opts.ifIdle;
      // A refusal here (draining, capacity, overload) costs no lease round trip.
      const refused = this.supervisor.admit();
      if (refused) return refused;
      let settle!: () => void;
      this.starting.set(member, new Promise<void>((r) => (settle = r)));
      try {
        const holder = await guarded(cluster.claim(kind, key, opts.owner));
        if (holder !== null) {
          if (opts.ifRunning === 'reject') return busy(kind, key);
          continue;
        }
        const limited = opts.owner !== undefined && opts.ownerLimit !== undefined;
        let started: Started<K, RunTypes[K]['value']>;
        try {
          started = limited ? await this.startClusterCounted(cluster, opts, () => this.spawn(opts)) : this.spawn(opts);
        } catch (err) {
          // The user's slot could not be taken (Redis failed): the key is given back, or it would be held
          // (and renewed) for the life of the process, refusing every start of that chat.
          cluster.release(kind, key);
          throw err;
        }
        if (!started.ok) cluster.release(kind, key);
        return started;
      } finally {
        this.starting.delete(member);
        settle();
      }
    }
    return busy(kind, key);
  }

  /** Follows a run on `owner`; null when it ended before it could be joined. */
  private async joinRemote<K extends Kind>(opts: StartOptions<RunTypes, K>, key: string, owner: string): Promise<RunHandle<K, RunTypes[K]['value']> | null> {
    const cluster = this.cluster!;
    const { kind, subscriber } = opts;
    if (subscriber && !(await guarded(cluster.follow(kind, key, owner, () => subscriber)))) return null;
    let result: Promise<RunResult<RunTypes[K]['value']>> | null = null;
    if (!subscriber) {
      const outcome = await guarded(cluster.wait(kind, key, owner));
      if (!outcome) return null;
      // The owner sent its run's RunResult over Redis: decoded, not trusted.
      result = Promise.resolve(decodeRunResult(kind, outcome));
    }
    const waitRemote = () =>
      guarded(cluster.wait(kind, key, owner)).then((r): RunResult<RunTypes[K]['value']> =>
        r === null ? { ok: false, outcome: 'not_found', message: 'the run ended elsewhere' } : decodeRunResult(kind, r),
      );
    return {
      ...remoteInfo(kind, key),
      joined: true,
      // A streaming joiner rarely needs the value: ask the owner only when someone reads it.
      get result() {
        return (result ??= waitRemote());
      },
    };
  }

  /** A run ended (the supervisor's onEnd): its key is free cluster-wide. */
  ended(run: RunInfo): void {
    this.storedAs.delete(run.runId);
    if (run.key !== null) this.cluster?.release(run.kind as Kind, run.key);
    const owner = this.counted.get(run.runId);
    if (owner === undefined) return;
    this.counted.delete(run.runId);
    const left = (this.perOwner.get(owner) ?? 1) - 1;
    if (left > 0) this.perOwner.set(owner, left);
    else this.perOwner.delete(owner);
    this.cluster?.userRuns.release(owner);
  }

  async attach(kind: Kind, key: string, subscriber: Subscriber): Promise<boolean | 'not_found'> {
    await this.starting.get(`${kind}:${key}`);
    const here = this.supervisor.attachNow(kind, key, subscriber);
    if (here === true) linkToRun(kind, key);
    if (here !== 'not_found') return here;
    const owner = await this.remoteOwner(kind, key);
    if (!owner) return 'not_found';
    return (await guarded(this.cluster!.follow(kind, key, owner, () => subscriber))) ? true : 'not_found';
  }

  /** A user's stop of the run of `key`, here or on its instance: false when none runs. */
  stop(kind: Kind, key: string): Promise<boolean> {
    return this.end(kind, key, 'stopped by request', false);
  }

  /** Ends the run of `key`, here or on its instance, with `message` as its error: false when none runs. */
  cancel(kind: Kind, key: string, message: string): Promise<boolean> {
    return this.end(kind, key, message, true);
  }

  private async end(kind: Kind, key: string, message: string, cancel: boolean): Promise<boolean> {
    if (this.endHere(kind, key, message, cancel)) return true;
    const owner = await this.remoteOwner(kind, key);
    if (!owner) return false;
    return guarded(this.cluster!.stop(kind, key, owner, message, cancel));
  }

  /** A stop (the run answers with what it has) or a cancel (it ends with `message` as its error), of a run here. */
  private endHere(kind: string, key: string, message: string, cancel: boolean): boolean {
    return cancel ? this.supervisor.cancelNow(kind, key, 'fenced', message) : this.supervisor.stopNow(kind, key, message);
  }

  async find(kind: Kind, key: string): Promise<RunInfo<Kind> | null> {
    const here = this.supervisor.findNow(kind, key);
    if (here) return here;
    return (await this.remoteOwner(kind, key)) ? remoteInfo(kind, key) : null;
  }

  /** `process`: this process's runs; `cluster`: every live instance's. */
  async list(scope: ActiveRunsScope): Promise<RunInfo<Kind>[]> {
    if (scope === 'process' || !this.cluster) return this.supervisor.listNow();
    return (await guarded(this.cluster.list())).map((r) => (r.user === undefined ? remoteInfo(r.kind, r.key) : { ...remoteInfo(r.kind, r.key), owner: r.user }));
  }

  /** The user of a run another instance holds, when its instance wrote one beside the lease. */
  async remoteUser(kind: Kind, key: string): Promise<string | undefined> {
    if (!this.cluster) return undefined;
    const holder = await guarded(this.cluster.holder(kind, key));
    return holder && holder.instanceId !== this.cluster.instanceId ? holder.user : undefined;
  }

  /** The instance holding the key's lease when it is another one. */
  private async remoteOwner(kind: Kind, key: string): Promise<string | null> {
    if (!this.cluster) return null;
    const owner = await guarded(this.cluster.owner(kind, key));
    return owner && owner !== this.cluster.instanceId ? owner : null;
  }
}
