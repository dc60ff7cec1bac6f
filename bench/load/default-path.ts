// Issue 38's default-path row: provider_a and provider_c with the service's tools on (`enabledTools`
// omitted, the spec's default) at a model-like pace, beside the same with `enabledTools: []`. With tools
// on, the service may hold a round's text (TOOL_TEXT_HOLD_MS, TOOL_TEXT_HOLD_CHARS) until it knows the
// round calls none, so the figure users feel is the time to first delta over the floor's.
// The stamped deltas are ~18 characters (`<epoch ms>|`) rather than a model's ~4: at 30 a second either
// stays far below the 512-character cap within the 250 ms hold, so the timer (or the wire) decides.
// Knobs (env): BENCH_DEFAULT_PATH=0 (off)  BENCH_DEFAULT_PATH_STEP=200:30:90 (K:deltas per second:deltas)
import { ccBody } from './bodies.ts';
import type { DriveContext } from './drive.ts';
import { measure, toRow, type Base, type Row } from './measure.ts';

const [K, RATE, DELTAS] = (process.env.BENCH_DEFAULT_PATH_STEP ?? '200:30:90').split(':').map(Number) as [number, number, number];
const STARTS = 100;

/** The service's stream body; `tools` false sends `enabledTools: []`, true leaves it out (all tools on). */
const body = (provider: string, tools: boolean) => {
  const ask = `load __I__\nSIM ${JSON.stringify({ deltas: DELTAS, rate: RATE, stamp: true })}`;
  return JSON.stringify({ provider, model: 'm', persist: true, ...(tools ? {} : { enabledTools: [] }), messages: [{ role: 'user', content: ask }] });
};

/** The rows (floor, then each provider with tools on and off) and the check's summary. */
export async function runDefaultPath(c: DriveContext, run: (base: Base, go: () => Promise<Row>) => Promise<Row | undefined>): Promise<Record<string, unknown>> {
  const job = { mode: 'streams' as const, host: '127.0.0.1', k: K, deltas: DELTAS, rate: RATE, startsPerSec: STARTS };
  const ccPath = new URL(c.sim.urls.provider_c).pathname + '/chat/completions';
  const base = (target: Row['target'], provider: string, variant?: string): Base =>
    ({ target, provider, persist: target === 'service' ? true : null, k: K, rate: RATE, scenario: 'stream', variant: variant ?? 'default-path' });
  const floor = await run(base('floor', 'provider_c'), async () =>
    toRow(base('floor', 'provider_c'), await measure(null, c.sim.child.pid, { ...job, port: c.sim.port, path: ccPath, headers: { authorization: 'Bearer k' }, body: ccBody(DELTAS, RATE), kind: 'cc' }), undefined));
  const summary: Record<string, unknown> = { step: { k: K, rate: RATE, deltas: DELTAS, startsPerSec: STARTS } };
  for (const provider of ['provider_a', 'provider_c']) {
    const figures: Record<string, unknown> = {};
    for (const tools of [true, false]) {
      const b = base('service', provider, tools ? 'default-path' : 'default-path-no-tools');
      const row = await run(b, () => c.withService(c.sim.urls, c.dbUrl, K * 2 + 1000, async (svc) =>
        toRow(b, await measure(svc.pid, c.sim.child.pid, { ...job, port: svc.port, path: '/v1/chat-completions/stream', body: body(provider, tools), kind: 'sse' }), floor,
          tools ? 'enabledTools omitted (every tool on): the text may be held while the service learns whether the round calls tools' : 'enabledTools: [] (nothing held)')));
      figures[tools ? 'toolsOn' : 'toolsOff'] = { ttfdAddedP50Ms: row?.ttfdAddedP50Ms ?? null, ttfdAddedP99Ms: row?.ttfdAddedP99Ms ?? null, failed: row?.failed ?? null };
    }
    const on = figures.toolsOn as { ttfdAddedP50Ms: number | null; ttfdAddedP99Ms: number | null };
    summary[provider] = { ...figures, pass: on.ttfdAddedP50Ms !== null && on.ttfdAddedP99Ms !== null && on.ttfdAddedP50Ms <= 300 && on.ttfdAddedP99Ms <= 400 };
  }
  return summary;
}
