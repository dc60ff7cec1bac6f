// Issue 51's brownout row: N persisted streams on provider_c with PROVIDER_FALLBACKS=provider_c=provider_b/…,
// three times on one service: provider_c healthy (the baseline), provider_c answering 30 % of its calls with
// 503 for 10 s (POST /sim/faults; once the retry budget's window has left the baseline), and provider_c fully
// down. Reported per phase: failed streams (pass: 0), provider_c calls ÷ starts (brownout pass: ≤ 1.2), time
// to first delta p50/p99 and its p99 added to the baseline's, fallbacks and retries; for the outage,
// provider_c calls once its breaker had opened (pass: none before its half-open trial,
// PROVIDER_BREAKER_OPEN_MS later than this phase lasts). Counts are the service's
// own /metrics (css_provider_calls_total, …), read before and after each phase.
// Knobs (env): BENCH_BROWNOUT=0 (off)  BENCH_BROWNOUT_N=500  BENCH_BROWNOUT_STARTS=250 (starts/s)
import { openStream, parseBlock, epochNow } from './client.ts';
import { serviceBody } from './bodies.ts';
import { Samples, summarize, round } from './stats.ts';
import { startService, type SimUrls } from './targets.ts';
import { sleep } from '../../test/helpers/procs.ts';
import { BUDGET_WINDOW_S } from '../../src/providers/resilience/budget.ts';

const env = process.env;
const num = (name: string, fallback: number) => Number(env[name] ?? fallback);
const DELTAS = 20;
const RATE = 20;
const FALLBACKS = 'provider_c=provider_b/sim-b-large';

interface Phase {
  streams: number;
  failed: number;
  ttfdMs: ReturnType<typeof summarize>;
  providerCCalls: number;
  callsPerStart: number | null;
  refusedByBreaker: number;
  retries: number;
  fallbacks: number;
}

/** The counters of css_provider_* and css_runs_fallback_total on /metrics, as `name{labels}` → value. */
async function counters(port: number): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line.startsWith('css_provider_') && !line.startsWith('css_runs_fallback_total')) continue;
    const at = line.lastIndexOf(' ');
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

const sumOf = (m: Map<string, number>, test: (key: string) => boolean) => [...m].filter(([k]) => test(k)).reduce((n, [, v]) => n + v, 0);

async function phase(port: number, n: number, starts: number, tag: string): Promise<Phase> {
  const before = await counters(port);
  const ttfd = new Samples();
  let closed = 0;
  let failed = 0;
  for (let i = 0; i < n; i++) {
    const t0 = epochNow();
    let first = true;
    let ok = false;
    openStream({ host: '127.0.0.1', port }, 'POST', '/v1/chat-completions/stream', {}, serviceBody('provider_c', true, DELTAS, RATE).replaceAll('__I__', `${tag} ${i}`), {
      onEvent: (block, at) => {
        const { event } = parseBlock(block);
        if (event === 'delta' && first) (first = false, ttfd.push(at - t0));
        else if (event === 'done') ok = true;
      },
      onClose: () => {
        closed++;
        if (!ok) failed++;
      },
    });
    if (i % Math.max(1, Math.round(starts / 100)) === 0) await sleep(10);
  }
  const end = Date.now() + 120_000;
  while (closed < n && Date.now() < end) await sleep(100);
  // Actor threads post their counts once a second when they changed: let the last post arrive.
  await sleep(1500);
  const after = await counters(port);
  const delta = (test: (key: string) => boolean) => sumOf(after, test) - sumOf(before, test);
  const calls = delta((k) => k.startsWith('css_provider_calls_total{provider="provider_c"') && !k.includes('breaker_open'));
  return {
    streams: n,
    failed: failed + (n - closed),
    ttfdMs: summarize(ttfd),
    providerCCalls: calls,
    callsPerStart: round(calls / n),
    refusedByBreaker: delta((k) => k === 'css_provider_calls_total{provider="provider_c",outcome="breaker_open"}'),
    retries: delta((k) => k === 'css_provider_retries_total{provider="provider_c"}'),
    fallbacks: delta((k) => k === 'css_runs_fallback_total{from="provider_c",to="provider_b"}'),
  };
}

export async function runBrownoutCheck(c: { sim: SimUrls; dbUrl: string | null; log(msg: string): void }): Promise<Record<string, unknown>> {
  const n = num('BENCH_BROWNOUT_N', 500);
  const starts = num('BENCH_BROWNOUT_STARTS', 250);
  const faults = `${new URL(c.sim.provider_c).origin}/sim/faults`;
  const setFaults = (body: unknown) => fetch(faults, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
  const svc = await startService({ sim: c.sim, databaseUrl: c.dbUrl, maxActiveRuns: n * 2 + 1000, env: { PROVIDER_FALLBACKS: FALLBACKS } });
  try {
    await setFaults({ clear: true });
    // A first round unmeasured: the service's first starts compile and connect.
    await phase(svc.port, Math.ceil(n / 5), starts, 'warm-up');
    const baseline = await phase(svc.port, n, starts, 'baseline');
    c.log(`brownout baseline: ${JSON.stringify(baseline)}`);
    // The retry budget allows 20 % of the first calls of its last 10 s: right after the healthy phase its
    // window would still hold that phase's 500 calls, 100 retries more than the brownout's own share. The
    // bound of 1.2 calls per start is the share's, so the brownout starts on a window of its own.
    await sleep(BUDGET_WINDOW_S * 1000 + 1000);
    await setFaults({ upstream: 'provider_c', status: 503, percent: 30, forMs: 10_000 });
    const brownout = await phase(svc.port, n, starts, 'brownout');
    c.log(`brownout 30 %: ${JSON.stringify(brownout)}`);
    await setFaults({ upstream: 'provider_c', status: 503 });
    const down = await phase(svc.port, n, starts, 'down');
    c.log(`brownout down: ${JSON.stringify(down)}`);
    await setFaults({ clear: true });
    const added = (p: Phase) => (p.ttfdMs.p99 !== null && baseline.ttfdMs.p99 !== null ? round(p.ttfdMs.p99 - baseline.ttfdMs.p99) : null);
    // Fully down: every call before the breaker opened failed (the first call and its retries each), and
    // none after it: provider_c's calls are the ones it took to open (PROVIDER_BREAKER_FAILURES, default 5,
    // plus those already in flight), not one per start.
    return {
      job: { n, startsPerSec: starts, deltas: DELTAS, rate: RATE, fallbacks: FALLBACKS },
      baseline,
      brownout: { ...brownout, addedTtfdP99Ms: added(brownout) },
      down: { ...down, addedTtfdP99Ms: added(down) },
      pass: baseline.failed === 0 && brownout.failed === 0 && (brownout.callsPerStart ?? Infinity) <= 1.2 && down.failed === 0 && down.refusedByBreaker > 0 && down.providerCCalls < n / 10,
    };
  } finally {
    await svc.child.stop();
  }
}
