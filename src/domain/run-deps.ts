// What a run needs, built once per actor host: configuration, a database pool, provider clients and
// the service tools available under this configuration.
import type { MessagePort } from 'node:worker_threads';
import type pg from 'pg';
import { Checkpoints } from './checkpoints.ts';
import type { Config } from '../base/config.ts';
import { CpuPool } from '../base/cpu-pool.ts';
import { survivePoolErrors } from '../db/connection-errors.ts';
import { postgresPool } from '../db/postgres-pool.ts';
import { WriteRetryQueue } from '../db/write-retry.ts';
import { remotePool } from '../db/remote-pool.ts';
import { createProviders } from '../providers/index.ts';
import type { ProviderAdapter, ProviderName } from '../providers/types.ts';
import { availableTools } from '../tools/registry.ts';
import type { ServiceTool } from '../tools/types.ts';
import { startTracing } from '../telemetry/tracing.ts';
import type { GenAiObservation } from '../telemetry/genai-metrics.ts';

export interface RunDeps {
  config: Config;
  pool: pg.Pool;
  providers: Map<ProviderName, ProviderAdapter>;
  tools: ServiceTool[];
  /** The thread's CPU pool (the server's own for inline hosts). */
  cpu: CpuPool;
  /** Failure writes that wait out a database outage: the server's own queue for inline hosts, the thread's in a worker. */
  writes: WriteRetryQueue;
  /** The host's checkpoint timer (CHECKPOINT_MS): persisted chat runs register with it once stored. */
  checkpoints?: Checkpoints;
  /** Told of each provider call when it ends (GenAI metrics, src/telemetry/genai-metrics.ts). */
  observeGenAi?: (o: GenAiObservation) => void;
}

/** Plain data handed to a worker thread (structured-cloned). */
export interface RunDepsInput {
  config: Config;
  /** A real Postgres: the worker opens its own pool. Null: queries go over `dbPort` (embedded). */
  databaseUrl: string | null;
  poolMax: number;
  dbPort?: MessagePort;
}

/**
 * `providers`: the thread's clients when it already has them (the main thread's, for inline hosts).
 * `onCheckpoint`: told of each checkpoint statement written (the main thread counts them for /metrics).
 */
export function runDepsFrom(
  config: Config,
  pool: pg.Pool,
  cpu: CpuPool,
  writes: WriteRetryQueue,
  providers = createProviders(config),
  onCheckpoint?: () => void,
  observeGenAi?: (o: GenAiObservation) => void,
): RunDeps {
  const checkpoints = new Checkpoints(pool, config.CHECKPOINT_MS, undefined, onCheckpoint);
  return { config, pool, providers, tools: availableTools(config), cpu, writes, checkpoints, observeGenAi };
}

export async function createRunDeps(input: RunDepsInput, onCheckpoint?: () => void, observeGenAi?: (o: GenAiObservation) => void): Promise<RunDeps> {
  let pool: pg.Pool;
  if (input.databaseUrl) {
    pool = postgresPool(input.databaseUrl, {
      max: input.poolMax,
      statementTimeoutMs: input.config.DATABASE_STATEMENT_TIMEOUT_MS,
      preparedStatements: input.config.DATABASE_PREPARED_STATEMENTS,
    });
    survivePoolErrors(pool);
  } else if (input.dbPort) {
    pool = remotePool(input.dbPort);
  } else {
    throw new Error('actor host has neither a database URL nor a database port');
  }
  // An actor thread's own SDK (tracing on): its provider, tool and database spans are sent from here,
  // each naming its parent; no async context (its promise hooks would cost every delta: tracing.ts).
  await startTracing(process.env, { asyncContext: false });
  // The thread's own: they end with the thread (a worker serves one server).
  return runDepsFrom(input.config, pool, new CpuPool(), new WriteRetryQueue(), undefined, onCheckpoint, observeGenAi);
}
