// The start-rate sweep: one-delta streams started at a steady rate below saturation (100, 250, 500 per
// second), after a warm-up, so a start's CPU is read where nothing queues (the 1,000/s burst stays as
// the overload row). Rows `"scenario":"start-rate"` with `rate` = starts per second, `cpuUsPerStart` of
// the process under test and, for persisted service rows, `pgCpuUsPerStart` of the bench database's
// Postgres backends (pg-cpu.ts).
// Knobs (env): BENCH_START_RATES=100,250,500 (empty: off)  BENCH_START_RATE_S=4 (seconds of starts per
//   rate: K = rate × this)  BENCH_START_RATE_TARGETS=floor,nginx,nginx-sql,peer,service,service-h2c (the last: persisted,
//   the provider over h2c, variant `h2c`; `nginx-sql`: issue 48's baseline, nginx's relay plus the start's own SQL
//   statements, start-baseline.ts: BENCH_SQL_POOL=4 connections, BENCH_SQL_WARM=500 starts first)
// Alone: BENCH_ONLY=startRate make bench (quick: BENCH_START_RATES=100 BENCH_START_RATE_S=2 BENCH_START_WARM_UP=500).
import { driveOnce, type DriveContext, type Who } from './drive.ts';
import type { Base, Row } from './measure.ts';
import { baselineRun, sqlClientFor } from './start-baseline.ts';

const env = process.env;
export const START_RATES = (env.BENCH_START_RATES ?? '100,250,500').split(',').filter(Boolean).map(Number);
const SECONDS = Number(env.BENCH_START_RATE_S ?? 4);
const TARGETS = new Set((env.BENCH_START_RATE_TARGETS ?? 'floor,nginx,nginx-sql,peer,service').split(','));

/** Measures every target at each start rate; `run` records (and logs) each row, as the sweep's runs do. */
export async function runStartRates(c: DriveContext, run: (base: Base, go: () => Promise<Row>) => Promise<Row | undefined>): Promise<void> {
  const sql = TARGETS.has('nginx-sql') && c.nginx !== null ? await sqlClientFor(c) : null;
  try {
    await eachRate(c, run, sql);
  } finally {
    await sql?.child.stop();
  }
}

async function eachRate(c: DriveContext, run: (base: Base, go: () => Promise<Row>) => Promise<Row | undefined>, sql: Awaited<ReturnType<typeof sqlClientFor>>): Promise<void> {
  for (const starts of START_RATES) {
    const k = Math.max(1, Math.round(starts * SECONDS));
    const step = { k, rate: 1, deltas: 1, startsPerSec: starts };
    const baseOf = (target: Row['target'], persist: boolean | null): Base => ({ target, provider: 'provider_c', persist, k, rate: starts, scenario: 'start-rate' });
    const floor = await run(baseOf('floor', null), () => driveOnce(c, { target: 'floor' }, baseOf('floor', null), step, undefined));
    const whos: Who[] = [
      // A relay this bench did not start (BENCH_ONLY, BENCH_TARGETS) is not measured: its row would replace a measured one.
      ...(['nginx', 'peer'] as const).filter((t) => TARGETS.has(t) && c[t] !== null).map((target) => ({ target })),
      ...(TARGETS.has('service') ? [true, false].map((persist) => ({ target: 'service' as const, persist })) : []),
      ...(TARGETS.has('service-h2c') ? [{ target: 'service' as const, persist: true, h2c: true }] : []),
    ];
    for (const who of whos) {
      const base: Base = { ...baseOf(who.target, who.target === 'service' ? who.persist : null), ...('h2c' in who && who.h2c ? { variant: 'h2c' } : {}) };
      await run(base, () => driveOnce(c, who, base, step, floor));
    }
    if (TARGETS.has('nginx-sql') && c.nginx !== null) {
      const base: Base = { ...baseOf('nginx', true), variant: 'sql' };
      await run(base, () => baselineRun(c, sql, base, step, floor));
    }
  }
}
