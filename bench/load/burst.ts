// Issue 48's burst row: N stream starts sent at once (a load test's ramp, a class pressing Enter
// together) to an idle instance with the defaults, each read to its end. Per N: how many were
// accepted and refused (by message), how many ended `done`, time to `meta` and to the first delta
// (p50/p99, from the send), and the time until the last accepted one got its `meta` (its admission).
// Each N on a fresh service (default-service.ts). The goal (issue 48): every start of 100, 400 and
// 1,000 accepted and ended `done`. Read here, never asserted.
//
// Knobs (env): BENCH_BURST_NS=100,400,1000  BENCH_BURST_DELTAS=20 BENCH_BURST_RATE=20 (each stream: a 1 s
//   stamped answer)  BENCH_DEFAULTS_WARM=50 (sequential warm-up starts before the burst)
// Alone: BENCH_ONLY=burst make bench (quick: BENCH_BURST_NS=20,50).
import { serviceBody } from './bodies.ts';
import { sendBurst, type BurstResult } from './burst-gen.ts';
import { withDefaultService } from './default-service.ts';
import type { SimUrls } from './targets.ts';

const env = process.env;
export const BURST_NS = (env.BENCH_BURST_NS ?? '100,400,1000').split(',').filter(Boolean).map(Number);
const DELTAS = Number(env.BENCH_BURST_DELTAS ?? 20);
const RATE = Number(env.BENCH_BURST_RATE ?? 20);

export interface BurstContext {
  sim: SimUrls;
  dbUrl: string | null;
  log(msg: string): void;
}

export async function runBurstRow(c: BurstContext): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { job: { ns: BURST_NS, deltas: DELTAS, rate: RATE, persist: true, provider: 'provider_c', admission: 'the service defaults' } };
  const results: BurstResult[] = [];
  for (const n of BURST_NS) {
    const r = await withDefaultService(c.sim, c.dbUrl, {}, (svc) =>
      sendBurst({ port: svc.port, n, body: serviceBody('provider_c', true, DELTAS, RATE), timeoutMs: 120_000 + n * 50 }));
    results.push(r);
    out[`n${n}`] = r;
    c.log(`burst N=${n}: accepted ${r.accepted}, refused ${JSON.stringify(r.refused)}, done ${r.done}${Object.keys(r.notDone).length ? ` ${JSON.stringify(r.notDone)}` : ''}; `
      + `meta p50 ${r.metaMs.p50} p99 ${r.metaMs.p99} ms, first delta p50 ${r.firstDeltaMs.p50} p99 ${r.firstDeltaMs.p99} ms, last admitted at ${r.lastAdmittedMs} ms`);
  }
  out.pass = results.length > 0 && results.every((r) => r.accepted === r.n && r.done === r.n);
  return out;
}
