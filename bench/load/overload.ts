// Issue 24's rows of `make bench`, run once each (they do not depend on K):
//  - overload: chat-stream starts offered for a while at the capacity rate, then at twice it, on a
//    fresh service each: with shedding off (OVERLOAD_LAG_MS huge: lag measured, nothing refused) at
//    1× and 2×, then with the default at 2×. Pass: the accepted streams' latency p99 at 2× with
//    shedding within 2× of the 1× figure, refusals answered within 10 ms at p99, nothing accepted lost.
//    The lag (css_event_loop_lag_p99_ms) sampled during each phase is what OVERLOAD_LAG_MS's default
//    is chosen from (README).
//  - rolling restart: two instances behind nginx (deploy/nginx.conf) with live streams; each instance
//    in turn drains on SIGTERM and comes back. Pass: 0 refused, 0 cut, 0 lost, 0 doubled.
// Knobs (env): BENCH_OVERLOAD=0 skips the first; BENCH_OVERLOAD_STARTS=250 (starts/s at capacity),
//   BENCH_OVERLOAD_DELTAS=80 BENCH_OVERLOAD_RATE=20 (a 4 s stream), BENCH_OVERLOAD_SECONDS=30.
//   BENCH_OVERLOAD_LAGS=100,200 adds a shedding phase at each of those thresholds beside the default's.
//   BENCH_ROLLING=0 skips the second; BENCH_ROLLING_LIVE=200 BENCH_ROLLING_DELTAS=200 (10 s at 20/s).
import { OVERLOAD_LAG_MS_DEFAULT } from '../../src/config.ts';
import { judgeRolling, rollingRestart } from '../../test/helpers/rolling.ts';
import { Samples, summarize } from './stats.ts';
import { offerStarts, type OverloadResult } from './overload-gen.ts';
import type { WithService } from './drive.ts';
import type { SimUrls } from './targets.ts';

export interface OverloadContext {
  sim: SimUrls;
  dbUrl: string | null;
  log(msg: string): void;
  withService: WithService;
  serviceBody(provider: string, persist: boolean, deltas: number, rate: number): string;
}

const env = process.env;
const num = (name: string, fallback: number) => Number(env[name] ?? fallback);
/** Shedding off for the measuring phases: the lag is still sampled, nothing is refused for it. */
const NEVER = '60000';


/** Samples the service's lag gauge every 250 ms until stopped. */
function sampleLag(port: number): { stop(): ReturnType<typeof summarize> } {
  const s = new Samples();
  const timer = setInterval(async () => {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '');
    const m = /^css_event_loop_lag_p99_ms (\S+)$/m.exec(text);
    if (m) s.push(Number(m[1]));
  }, 250);
  return {
    stop() {
      clearInterval(timer);
      return summarize(s);
    },
  };
}

/** A row that fails says why in results.json rather than ending the bench. */
const caught = (err: Error) => ({ error: err.message.split('\n').slice(0, 3).join(' ') });

export const runOverloadCheck = (c: OverloadContext) => overloadCheck(c).catch(caught);
export const runRollingCheck = (c: Pick<OverloadContext, 'sim' | 'dbUrl' | 'log'>) => rollingCheck(c).catch(caught);

async function overloadCheck(c: OverloadContext): Promise<Record<string, unknown>> {
  const starts = num('BENCH_OVERLOAD_STARTS', 250);
  const deltas = num('BENCH_OVERLOAD_DELTAS', 80);
  const rate = num('BENCH_OVERLOAD_RATE', 20);
  const seconds = num('BENCH_OVERLOAD_SECONDS', 30);
  const body = c.serviceBody('provider_c', true, deltas, rate);
  const phase = async (name: string, factor: number, lagMs: string) => {
    const maxRuns = Math.ceil(starts * factor * (deltas / rate + seconds)) + 1000;
    return c.withService(c.sim, c.dbUrl, maxRuns, async (svc) => {
      const lag = sampleLag(svc.port);
      const result = await offerStarts({ port: svc.port, body, deltas, startsPerSec: starts * factor, seconds });
      const out = { ...result, lagP99Ms: lag.stop(), overloadLagMs: Number(lagMs), startsPerSec: starts * factor };
      c.log(`overload ${name}: ${out.accepted}/${out.offered} accepted, latency p99 ${out.latencyMs.p99} ms, refusal p99 ${out.refusalMs.p99} ms, `
        + `lost ${out.lost}, failed ${out.failed}, lag p50 ${out.lagP99Ms.p50} max ${out.lagP99Ms.max} ms ${JSON.stringify(out.refused)}`);
      return out;
    }, undefined, { OVERLOAD_LAG_MS: lagMs });
  };
  const atCapacity = await phase('1x, no shedding', 1, NEVER);
  const unshed = await phase('2x, no shedding', 2, NEVER);
  const shed = await phase(`2x, OVERLOAD_LAG_MS=${OVERLOAD_LAG_MS_DEFAULT}`, 2, String(OVERLOAD_LAG_MS_DEFAULT));
  // Other thresholds beside the default, to choose it from (BENCH_OVERLOAD_LAGS=100,200).
  const others: Record<string, OverloadResult> = {};
  for (const lag of (process.env.BENCH_OVERLOAD_LAGS ?? '').split(',').filter(Boolean)) others[lag] = await phase(`2x, OVERLOAD_LAG_MS=${lag}`, 2, lag);
  const p99 = (r: OverloadResult) => r.latencyMs.p99 ?? Infinity;
  return {
    job: { startsPerSec: starts, deltas, rate, seconds },
    atCapacity,
    twiceNoShedding: unshed,
    twiceShedding: shed,
    twiceSheddingAt: others,
    pass: {
      acceptedWithin2x: p99(shed) <= 2 * p99(atCapacity),
      refusalP99Within10ms: (shed.refusalMs.p99 ?? 0) <= 10,
      nothingAcceptedLost: shed.lost === 0 && shed.failed === 0,
    },
  };
}

async function rollingCheck(c: Pick<OverloadContext, 'sim' | 'dbUrl' | 'log'>): Promise<Record<string, unknown>> {
  if (!c.dbUrl) return { skipped: 'needs Postgres: both instances share one database' };
  const live = num('BENCH_ROLLING_LIVE', 200);
  const deltas = num('BENCH_ROLLING_DELTAS', 200);
  const result = await rollingRestart({
    env: {
      DATABASE_URL: c.dbUrl,
      SIMULATE: 'off',
      PROVIDER_C_API_KEY: 'k',
      PROVIDER_C_BASE_URL: c.sim.provider_c,
      SHUTDOWN_GRACE_MS: '120000',
    },
    live,
    deltas,
    rate: 20,
    log: (line) => c.log(`rolling: ${line}`),
  });
  if (!result) return { skipped: 'nginx is not installed and could not be' };
  const verdict = await judgeRolling(result, c.dbUrl);
  c.log(`rolling restart: ${JSON.stringify(verdict)}, exit codes ${result.exitCodes.join(',')}, live at each SIGTERM ${result.activeAtSigterm.join(',')}`);
  return {
    job: { live, deltas, rate: 20 },
    ...verdict,
    exitCodes: result.exitCodes,
    liveAtSigterm: result.activeAtSigterm,
    pass: verdict.refused === 0 && verdict.cut === 0 && verdict.lost === 0 && verdict.doubled === 0 && result.exitCodes.every((e) => e === 0),
  };
}
