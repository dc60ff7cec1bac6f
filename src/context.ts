// What route handlers share: configuration, storage, the supervisor, providers and tools.
import type pg from 'pg';
import type { Logger } from 'pino';
import type { Supervisor } from '../actors/supervisor.ts';
import type { Config } from './config.ts';
import type { ModelRegistry } from './models/registry.ts';
import type { ProviderAdapter, ProviderName } from './providers/types.ts';
import type { ServiceTool } from './tools/types.ts';

export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export interface AppContext {
  config: Config;
  pool: pg.Pool;
  supervisor: Supervisor;
  providers: Map<ProviderName, ProviderAdapter>;
  tools: ServiceTool[];
  log: Logger;
  clock: Clock;
  /** Names of providers and engines served by the offline simulator (empty in production). */
  simulated: string[];
  /** Provider model lists, loaded in the background and refreshed about daily. */
  models: ModelRegistry;
}
