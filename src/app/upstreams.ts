// SIMULATE: serve providers and engines that have no key from the bundled offline simulator
// (src/sim: product code, so `make run` works on a machine with no keys and no network). Never with
// NODE_ENV=production: there SIMULATE is off whatever it is set to.
import type { Config } from '../base/config.ts';

export interface Upstreams {
  config: Config;
  /** The upstreams now served by the simulator. */
  simulated: string[];
  close(): Promise<void>;
}

const SIM_KEY = 'sim-key';

export async function resolveUpstreams(config: Config): Promise<Upstreams> {
  const mode = config.NODE_ENV === 'production' ? 'off' : config.SIMULATE;
  const all = mode === 'all';
  const wanted = {
    provider_a: all || !config.PROVIDER_A_API_KEY,
    provider_b: all || !config.PROVIDER_B_API_KEY,
    provider_c: all || !config.PROVIDER_C_API_KEY,
    provider_d: all || !config.AGENT_PROVIDER_API_KEY,
    engine_a: all || !config.ENGINE_A_API_KEY,
    engine_b: all || !config.CHAT_ENGINE_B_BASE_URL,
  };
  const simulated = Object.entries(wanted).filter(([, v]) => v).map(([k]) => k);
  if (mode === 'off' || simulated.length === 0) return { config, simulated: [], close: async () => {} };

  const { startSimulator } = await import('../sim/server.ts');
  const sim = await startSimulator({ port: 0, host: '127.0.0.1' });
  const c: Config = { ...config };
  if (wanted.provider_a) Object.assign(c, { PROVIDER_A_API_KEY: SIM_KEY, PROVIDER_A_BASE_URL: sim.urls.provider_a });
  if (wanted.provider_b) Object.assign(c, { PROVIDER_B_API_KEY: SIM_KEY, PROVIDER_B_BASE_URL: sim.urls.provider_b });
  if (wanted.provider_c) Object.assign(c, { PROVIDER_C_API_KEY: SIM_KEY, PROVIDER_C_BASE_URL: sim.urls.provider_c });
  if (wanted.provider_d) Object.assign(c, { AGENT_PROVIDER_API_KEY: SIM_KEY, AGENT_PROVIDER_API_BASE_URL: sim.urls.provider_d });
  if (wanted.engine_a) Object.assign(c, { ENGINE_A_API_KEY: SIM_KEY, ENGINE_A_BASE_URL: sim.urls.engine_a });
  if (wanted.engine_b) Object.assign(c, { CHAT_ENGINE_B_BASE_URL: sim.urls.engine_b });
  return { config: c, simulated, close: () => sim.close() };
}
