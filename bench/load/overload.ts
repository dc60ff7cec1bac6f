// Issue 24's rows of `make bench`, run once each (they do not depend on K):
//  - overload: chat-stream starts offered for a while at the capacity rate, then at twice it, on a
//    fresh service each: with shedding off (every signal off: the gauges measured, nothing refused) at
//    1× and 2×, then with the defaults at 1× and 2×. Pass: the accepted streams' latency p99 at 2× with
//    shedding within 2× of the 1× figure, refusals answered within 10 ms at p99, nothing accepted lost,
//    nothing refused at 1× (shedding must not cost ordinary load).
//    The lag (css_event_loop_lag_p99_ms) and busy gauges are sampled during each phase.
//  - rolling restart: two instances behind nginx (deploy/nginx.conf) with live streams; each instance
//    in turn drains on SIGTERM and comes back. Pass: 0 refused, 0 cut, 0 lost, 0 doubled.
// Knobs (env): BENCH_OVERLOAD=0 skips the first; BENCH_OVERLOAD_STARTS=125 (starts/s the instance carries: 250 was, on this machine's first runs),
//   BENCH_OVERLOAD_DELTAS=80 BENCH_OVERLOAD_RATE=20 (a 4 s stream), BENCH_OVERLOAD_SECONDS=30.
//   Each phase samples the lag and busy gauges (the service's defaults otherwise; "no shedding": every signal off).
//   BENCH_ROLLING=0 skips the second; BENCH_ROLLING_LIVE=200 BENCH_ROLLING_DELTAS=200 (10 s at 20/s).
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


/** Samples the service's two saturation gauges, the lag (ms) and the busiest thread (%), every 250 ms until stopped. */
export function sampleSaturation(port: number): { stop(): { lag: ReturnType<typeof summarize>; busy: ReturnType<typeof summarize> } } {
  const lag = new Samples();
  const busy = new Samples();
  const timer = setInterval(async () => {
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then((r) => r.text(), () => '');
    const l = /^css_event_loop_lag_p99_ms (\S+)$/m.exec(text);
    if (l) lag.push(Number(l[1]));
    const b = /^css_event_loop_busy_percent (\S+)$/m.exec(text);
    if (b) busy.push(Number(b[1]));
  }, 250);
  return {
    stop() {
      clearInterval(timer);
      return { lag: summarize(lag), busy: summarize(busy) };
    },
  };
}

/** Shedding off (ADMISSION=off): nothing is refused for overload and no start waits; the gauges read 0. */
export const SHEDDING_OFF: Record<string, string> = { ADMISSION: 'off' };
/** The service's own defaults (the bench's services start with shedding off: targets.ts). */
export const SHEDDING_DEFAULTS: Record<string, string> = { ADMISSION: 'adaptive' };

/** A row that fails says why in results.json rather than ending the bench. */
const caught = (err: Error) => ({ error: err.message.split('\n').slice(0, 3).join(' ') });

export const runOverloadCheck = (c: OverloadContext) => overloadCheck(c).catch(caught);
export const runRollingCheck = (c: Pick<OverloadContext, 'sim' | 'dbUrl' | 'log'>) => rollingCheck(c).catch(caught);

async function overloadCheck(c: OverloadContext): Promise<Record<string, unknown>> {
  const starts = num('BENCH_OVERLOAD_STARTS', 125);
  const deltas = num('BENCH_OVERLOAD_DELTAS', 80);
  const rate = num('BENCH_OVERLOAD_RATE', 20);
  const seconds = num('BENCH_OVERLOAD_SECONDS', 30);
  const body = c.serviceBody('provider_c', true, deltas, rate);
  const phase = async (name: string, factor: number, signals: Record<string, string>) => {
    const maxRuns = Math.ceil(starts * factor * (deltas / rate + seconds)) + 1000;
    return c.withService(c.sim, c.dbUrl, maxRuns, async (svc) => {
      const gauges = sampleSaturation(svc.port);
      const result = await offerStarts({ port: svc.port, body, deltas, startsPerSec: starts * factor, seconds });
      const { lag, busy } = gauges.stop();
      const out = { ...result, lagP99Ms: lag, busyPercent: busy, signals, startsPerSec: starts * factor };
      c.log(`overload ${name}: ${out.accepted}/${out.offered} accepted, latency p99 ${out.latencyMs.p99} ms, refusal p99 ${out.refusalMs.p99} ms, `
        + `lost ${out.lost}, failed ${out.failed}, lag p50 ${lag.p50} max ${lag.max} ms, busy p50 ${busy.p50} max ${busy.max} % ${JSON.stringify(out.refused)}`);
      return out;
    }, undefined, signals);
  };
  const atCapacity = await phase('1x, no shedding', 1, SHEDDING_OFF);
  // The instance's own defaults at the rate it carries: what they refuse there is shed ordinary load.
  const atCapacityShedding = await phase('1x, the defaults', 1, SHEDDING_DEFAULTS);
  const unshed = await phase('2x, no shedding', 2, SHEDDING_OFF);
  const shed = await phase('2x, the defaults', 2, SHEDDING_DEFAULTS);
  const p99 = (r: OverloadResult) => r.latencyMs.p99 ?? Infinity;
  return {
    job: { startsPerSec: starts, deltas, rate, seconds },
    atCapacity,
    atCapacityShedding,
    twiceNoShedding: unshed,
    twiceShedding: shed,
    pass: {
      acceptedWithin2x: p99(shed) <= 2 * p99(atCapacity),
      nothingRefusedAtCapacity: atCapacityShedding.accepted === atCapacityShedding.offered,
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
