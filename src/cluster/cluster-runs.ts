// The run registry of a cluster (REDIS_URL set): a run key (a chat, a search) is held by one run across
// every instance. A start first looks here (synchronously), then takes the key's lease in Redis (two
// instances: Redis picks one), and only then starts the run here. Attach, wait and stop go to the run
// wherever it lives. Each owner's runs are counted in Redis, so a user's limit holds cluster-wide.
import { decodeRunResult } from '../../actors/results.ts';
import type { RunSupervisor, RunTypes } from '../../actors/runs.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { RunHandle, RunInfo, Started, StartOptions, StartRefusal } from '../../actors/runtime/registry.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { ClusterUnavailableError, endHere, LedgerRuns, type ActiveRunsScope, type Kind, type Runs, type UserRefusals } from '../service/runs.ts';
import { OwnerUnreachableError, type Cluster } from './cluster.ts';
import { RedisUnavailableError } from './redis.ts';
import { linkToRun, withRunSpan } from '../telemetry/run-spans.ts';

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

/** What is known of a run on another instance. */
const remoteInfo = <K extends Kind>(kind: K, key: string): RunInfo<K> => ({ runId: '', kind, key, label: '', startedAt: 0 });

export class ClusterRuns extends LedgerRuns implements Runs {
  /** Keys whose lease this instance is taking: other starts, attaches and joins wait for the outcome. */
  private readonly starting = new Map<string, Promise<void>>();

  constructor(
    supervisor: RunSupervisor,
    private readonly cluster: Cluster,
    refusals: UserRefusals | null = null,
  ) {
    super(supervisor, refusals);
  }

  start<K extends Kind>(opts: StartOptions<RunTypes, K>): Started<K, RunTypes[K]['value']> | Promise<Started<K, RunTypes[K]['value']>> {
    if (opts.key !== null) return this.startKeyed(opts, opts.key);
    return opts.owner !== undefined && opts.ownerLimit !== undefined ? this.startCounted(opts, () => this.ledger.spawn(opts)) : this.ledger.spawn(opts);
  }

  /** One of the owner's slots is taken in Redis before the run starts, given back if it does not. */
  private async startCounted<K extends Kind>(
    opts: StartOptions<RunTypes, K>,
    start: () => Started<K, RunTypes[K]['value']> | Promise<Started<K, RunTypes[K]['value']>>,
  ): Promise<Started<K, RunTypes[K]['value']>> {
    const { cluster } = this;
    const owner = opts.owner!;
    if (!(await guarded(cluster.userRuns.claim(owner, opts.ownerLimit!)))) return this.ledger.userRefusal(opts.ownerLimit!);
    let started: Started<K, RunTypes[K]['value']>;
    try {
      started = await start();
    } catch (err) {
      cluster.userRuns.release(owner);
      throw err;
    }
    if (started.ok && !started.handle.joined && started.handle.runId !== '') this.ledger.count(started.handle.runId, owner);
    else cluster.userRuns.release(owner);
    return started;
  }

  private async startKeyed<K extends Kind>(opts: StartOptions<RunTypes, K>, key: string): Promise<Started<K, RunTypes[K]['value']>> {
    const { kind } = opts;
    const { cluster } = this;
    const member = `${kind}:${key}`;
    // A lost race means another run holds the key now: join it (it may end at once, then start ours).
    for (let attempt = 0; attempt < 5; attempt++) {
      await this.starting.get(member);
      if (this.supervisor.findNow(kind, key)) return this.ledger.spawn(opts);
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
      const refused = this.supervisor.admit(opts.owner);
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
          started = limited ? await this.startCounted(opts, () => this.ledger.spawn(opts)) : this.ledger.spawn(opts);
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
    const { cluster } = this;
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

  /** A run ended (the supervisor's onEnd): its key is free cluster-wide, and its owner's slot. */
  ended(run: RunInfo): void {
    // Tracing: the lease's release is a child of the run's span.
    if (run.key !== null) withRunSpan(run.runId, () => this.cluster.release(run.kind as Kind, run.key!));
    const owner = this.ledger.ended(run);
    if (owner !== undefined) this.cluster.userRuns.release(owner);
  }

  async attach(kind: Kind, key: string, subscriber: Subscriber): Promise<boolean | 'not_found'> {
    await this.starting.get(`${kind}:${key}`);
    const here = this.supervisor.attachNow(kind, key, subscriber);
    if (here === true) linkToRun(kind, key);
    if (here !== 'not_found') return here;
    const owner = await this.remoteOwner(kind, key);
    if (!owner) return 'not_found';
    return (await guarded(this.cluster.follow(kind, key, owner, () => subscriber))) ? true : 'not_found';
  }

  stop(kind: Kind, key: string): Promise<boolean> {
    return this.end(kind, key, 'stopped by request', false);
  }

  cancel(kind: Kind, key: string, message: string): Promise<boolean> {
    return this.end(kind, key, message, true);
  }

  private async end(kind: Kind, key: string, message: string, cancel: boolean): Promise<boolean> {
    if (endHere(this.supervisor, kind, key, message, cancel)) return true;
    const owner = await this.remoteOwner(kind, key);
    if (!owner) return false;
    return guarded(this.cluster.stop(kind, key, owner, message, cancel));
  }

  async find(kind: Kind, key: string): Promise<RunInfo<Kind> | null> {
    const here = this.supervisor.findNow(kind, key);
    if (here) return here;
    return (await this.remoteOwner(kind, key)) ? remoteInfo(kind, key) : null;
  }

  async list(scope: ActiveRunsScope): Promise<RunInfo<Kind>[]> {
    if (scope === 'process') return this.supervisor.listNow();
    return (await guarded(this.cluster.list())).map((r) => (r.user === undefined ? remoteInfo(r.kind, r.key) : { ...remoteInfo(r.kind, r.key), owner: r.user }));
  }

  async remoteUser(kind: Kind, key: string): Promise<string | undefined> {
    const holder = await guarded(this.cluster.holder(kind, key));
    return holder && holder.instanceId !== this.cluster.instanceId ? holder.user : undefined;
  }

  /** A run elsewhere may hold the key: only its lease in Redis can tell, which is no synchronous answer. */
  wouldStart(): boolean {
    return false;
  }

  /** The instance holding the key's lease when it is another one. */
  private async remoteOwner(kind: Kind, key: string): Promise<string | null> {
    const owner = await guarded(this.cluster.owner(kind, key));
    return owner && owner !== this.cluster.instanceId ? owner : null;
  }
}
