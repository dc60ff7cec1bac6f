// Each user's limits (ARCHITECTURE.md, "Users", Limits): runs going at once, cluster-wide (counted by
// the run registry, src/runs.ts), and tokens per UTC day (user_day_tokens). The admin has none. Runs
// already going are never cut by a limit: only starts are refused.
import type { Admission } from './admission.ts';
import type { Caller } from './auth/caller.ts';
import type { Config } from './config.ts';
import type { Queryable } from './db/types.ts';
import { USER_TOKENS_EXHAUSTED } from './http/errors.ts';
import { tokensToday } from './store/day-tokens.ts';

export const TOKEN_BUDGET_MESSAGE = 'daily token budget exhausted';

export class UserLimits {
  private readonly config: Pick<Config, 'USER_MAX_ACTIVE_RUNS' | 'USER_TOKENS_PER_DAY'>;
  private readonly db: Queryable;
  private readonly admission: Pick<Admission, 'refusedForUser'>;

  constructor(config: Pick<Config, 'USER_MAX_ACTIVE_RUNS' | 'USER_TOKENS_PER_DAY'>, db: Queryable, admission: Pick<Admission, 'refusedForUser'>) {
    this.config = config;
    this.db = db;
    this.admission = admission;
  }

  /** The start options that make the registry count the run against its owner's limit. */
  runOptions(caller: Caller): { owner: string; ownerLimit?: number } {
    if (caller.admin) return { owner: caller.userId };
    return { owner: caller.userId, ownerLimit: caller.maxActiveRuns ?? this.config.USER_MAX_ACTIVE_RUNS };
  }

  /**
   * Rejects with the 429 when the caller's LlmCalls of this UTC day have reached their budget (a run
   * that calls a model). Null, synchronously, when the caller has no budget: a start without one
   * reads nothing and awaits nothing.
   */
  checkTokens(caller: Caller): Promise<void> | null {
    if (caller.admin) return null;
    const budget = caller.tokensPerDay ?? this.config.USER_TOKENS_PER_DAY;
    if (budget === undefined) return null;
    return tokensToday(this.db, caller.userId).then((used) => {
      if (used < budget) return;
      this.admission.refusedForUser('user_tokens');
      throw USER_TOKENS_EXHAUSTED(TOKEN_BUDGET_MESSAGE);
    });
  }
}
