// What managing users does beyond the database: a revoked user's cached keys stop resolving, and a
// deleted user's runs end, on this instance at once and on every other one through the cluster.
import type { Logger } from 'pino';
import type { RunSupervisor } from '../actors/runs.ts';
import type { Callers } from './auth/callers.ts';
import type { Cluster } from './cluster/cluster.ts';

export const USER_DELETED_MESSAGE = 'run cancelled: user deleted';
const TOPIC = 'users';

interface Revocation {
  userId: string;
  /** The user is gone: their runs end too. */
  deleted: boolean;
}

export class UserRevocations {
  private readonly callers: Callers;
  private readonly supervisor: RunSupervisor;
  private readonly log: Logger;
  private cluster: Cluster | null = null;

  constructor(callers: Callers, supervisor: RunSupervisor, log: Logger) {
    this.callers = callers;
    this.supervisor = supervisor;
    this.log = log;
  }

  /** Cluster mode: hear the other instances' revocations. Missed ones (Redis was away) forget every key. */
  async useCluster(cluster: Cluster): Promise<void> {
    await cluster.listenTo(
      TOPIC,
      (raw) => {
        try {
          this.apply(JSON.parse(raw) as Revocation);
        } catch (err) {
          this.log.warn({ err }, 'bad user revocation message');
        }
      },
      () => this.callers.revokeAll(),
    );
    this.cluster = cluster;
  }

  /** The user's keys changed or went (rotation, disabling, deletion): applied here, then announced. */
  async revoke(userId: string, deleted: boolean): Promise<void> {
    const r: Revocation = { userId, deleted };
    this.apply(r);
    // Peers that miss it (Redis down) drop the key when their cache entry ages out.
    await this.cluster?.broadcast(TOPIC, JSON.stringify(r)).catch((err: unknown) => this.log.warn({ err, userId }, 'user revocation not announced to the cluster'));
  }

  private apply(r: Revocation): void {
    if (typeof r.userId !== 'string') return;
    this.callers.revoke(r.userId);
    if (r.deleted) this.supervisor.cancelOwned(r.userId, 'fenced', USER_DELETED_MESSAGE);
  }
}
