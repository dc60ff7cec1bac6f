// What users mean beyond the database: a revoked user's cached keys stop resolving and a deleted user's
// runs end, on this instance at once and on every other one through the cluster; and each user's limits
// (docs/operations.md, "Users and single sign-on", Limits): runs going at once, cluster-wide (counted by
// the run registry, src/service/runs.ts), and tokens and USD per UTC day (user_day_tokens). The admin has none. Runs already going are
// never cut by a limit: only starts are refused.
import type { Logger } from 'pino';
import type { Admission } from '../admission/admission.ts';
import type { Caller } from '../auth/caller.ts';
import type { Callers } from '../auth/callers.ts';
import type { Cluster } from '../cluster/cluster.ts';
import type { Config } from '../base/config.ts';
import type { Queryable } from '../db/types.ts';
import { USER_TOKENS_EXHAUSTED } from '../http/errors.ts';
import { spendToday, spentToday } from '../store/day-tokens.ts';

export const USER_DELETED_MESSAGE = 'run cancelled: user deleted';
const TOPIC = 'users';

interface Revocation {
  userId: string;
  /** The user is gone: their runs end too. */
  deleted: boolean;
}

/** What a deletion asks of the run registry (src/service/runs.ts): end the user's runs and start none of theirs. */
export interface DeletedOwners {
  ownerDeleted(owner: string, message: string): void;
}

export class UserRevocations {
  private readonly callers: Callers;
  private readonly runs: DeletedOwners;
  private readonly log: Logger;
  private cluster: Cluster | null = null;

  constructor(callers: Callers, runs: DeletedOwners, log: Logger) {
    this.callers = callers;
    this.runs = runs;
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
    if (r.deleted) this.runs.ownerDeleted(r.userId, USER_DELETED_MESSAGE);
  }
}

export const TOKEN_BUDGET_MESSAGE = 'daily token budget exhausted';
export const COST_BUDGET_MESSAGE = 'daily cost budget exhausted';

/** What an unpersisted run spent: its tokens and their cost in USD (null: a model without a price). */
export interface RunSpending {
  tokens: number;
  cost: number | null;
}

export class UserLimits {
  private readonly config: Pick<Config, 'USER_MAX_ACTIVE_RUNS' | 'USER_TOKENS_PER_DAY' | 'USER_COST_PER_DAY'>;
  private readonly db: Queryable;
  private readonly admission: Pick<Admission, 'refusedForUser'>;
  private readonly log: Pick<Logger, 'warn'>;

  constructor(
    config: Pick<Config, 'USER_MAX_ACTIVE_RUNS' | 'USER_TOKENS_PER_DAY' | 'USER_COST_PER_DAY'>,
    db: Queryable,
    admission: Pick<Admission, 'refusedForUser'>,
    log: Pick<Logger, 'warn'>,
  ) {
    this.config = config;
    this.db = db;
    this.admission = admission;
    this.log = log;
  }

  /** The start options that make the registry count the run against its owner's limit. */
  runOptions(caller: Caller): { owner: string; ownerLimit?: number } {
    if (caller.admin) return { owner: caller.userId };
    return { owner: caller.userId, ownerLimit: caller.maxActiveRuns ?? this.config.USER_MAX_ACTIVE_RUNS };
  }

  /**
   * Rejects with the 429 when the caller's LlmCalls of this UTC day have reached their token or their
   * cost budget (a run that calls a model). Null, synchronously, when the caller has neither: a start
   * without one reads nothing and awaits nothing.
   */
  checkBudgets(caller: Caller): Promise<void> | null {
    if (caller.admin) return null;
    const tokens = caller.tokensPerDay ?? this.config.USER_TOKENS_PER_DAY;
    const cost = caller.costPerDay ?? this.config.USER_COST_PER_DAY;
    if (tokens === undefined && cost === undefined) return null;
    return spentToday(this.db, caller.userId).then((spent) => {
      if (tokens !== undefined && spent.tokens >= tokens) {
        this.admission.refusedForUser('user_tokens');
        throw USER_TOKENS_EXHAUSTED(TOKEN_BUDGET_MESSAGE);
      }
      if (cost !== undefined && spent.cost >= cost) {
        this.admission.refusedForUser('user_cost');
        throw USER_TOKENS_EXHAUSTED(COST_BUDGET_MESSAGE);
      }
    });
  }

  /**
   * The tokens of a run that stores no LlmCall (a stream with persist: false: the spec stores nothing
   * of it) go to the caller's daily total when it ends, or such runs would spend past any budget.
   * Written once: a retry after a lost reply could count them twice; a failed write only warns.
   */
  spendUnrecorded(caller: Caller, spending: Promise<RunSpending>): void {
    if (caller.admin) return;
    void spending
      .then((s) => (s.tokens > 0 ? spendToday(this.db, caller.userId, s.tokens, s.cost ?? 0) : undefined))
      .catch((err: unknown) => this.log.warn({ err, userId: caller.userId }, "an unpersisted run's tokens were not added to the user's daily total"));
  }
}
