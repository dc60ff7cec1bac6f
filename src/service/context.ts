// What route handlers share: configuration, storage, the supervisor, providers and tools.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { RunSupervisor } from '../../actors/runs.ts';
import type { Clock } from '../base/clock.ts';
import type { Config } from '../base/config.ts';
import type { ClaimedKeys } from './claimed-keys.ts';
import type { WriteRetryQueue } from '../db/write-retry.ts';
import type { SseStreams } from '../http/sse.ts';
import type { Metrics } from './metrics.ts';
import type { ModelRegistry } from '../models/registry.ts';
import type { Readiness } from './readiness.ts';
import type { Runs } from './runs.ts';
import type { UserLimits } from './users.ts';
import type { ProviderAdapter, ProviderName } from '../providers/types.ts';
import type { ServiceTool } from '../tools/types.ts';

export { systemClock, type Clock } from '../base/clock.ts';

export interface AppContext {
  config: Config;
  pool: pg.Pool;
  /** Where routes start, attach to, stop and list runs: the supervisor, cluster-wide in cluster mode. */
  runs: Runs;
  /** This process's runs and hosts (metrics, shutdown). */
  supervisor: RunSupervisor;
  providers: Map<ProviderName, ProviderAdapter>;
  tools: ServiceTool[];
  log: Logger;
  clock: Clock;
  /** Names of providers and engines served by the offline simulator (empty in production). */
  simulated: string[];
  /** Provider model lists, loaded in the background and refreshed about daily. */
  models: ModelRegistry;
  /** GET /ready's checks (the database; cluster mode adds its own). */
  readiness: Readiness;
  metrics: Metrics;
  /** This server's SSE streams: routes open theirs here. */
  sse: SseStreams;
  /** Each user's limits (active runs, daily tokens); the admin has none. */
  limits: UserLimits;
  /** Idempotency-Keys this server claimed whose run has not recorded its outcome yet. */
  claimedKeys: ClaimedKeys;
  /** Writes that must outlive a database blip (retried in the background); drained when the server stops. */
  writes: WriteRetryQueue;
}
