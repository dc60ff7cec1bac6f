// Issue 37's checkpoint rows: CPU per delta of persisted provider_c streams with CHECKPOINT_MS=1000
// against 0 (off), in the same run, at each K; and at the largest K the Postgres backends' CPU per
// second that the checkpoints add (the difference of the two runs' backends, pg-cpu.ts, over the job's time).
// Pass: at most 5 % more CPU per delta with checkpoints.
// Knobs (env): BENCH_CHECKPOINTS=0 (off)  BENCH_CHECKPOINT_SWEEP=1000:20:120,5000:4:40 (K:rate:deltas)
//   BENCH_CHECKPOINT_MS=1000
import { serviceBody } from './bodies.ts';
import type { DriveContext } from './drive.ts';
import { measure, r2, toRow, type Base, type Row } from './measure.ts';

const SWEEP = (process.env.BENCH_CHECKPOINT_SWEEP ?? '1000:20:120,5000:4:40').split(',').filter(Boolean).map((s) => {
  const [k, rate, deltas] = s.split(':').map(Number) as [number, number, number];
  return { k, rate, deltas };
});
const INTERVAL = process.env.BENCH_CHECKPOINT_MS ?? '1000';
const STARTS = 1000;

export async function runCheckpoints(c: DriveContext, run: (base: Base, go: () => Promise<Row>) => Promise<Row | undefined>): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { checkpointMs: Number(INTERVAL) };
  for (const { k, rate, deltas } of SWEEP) {
    const figures: Record<string, { cpuUsPerDelta: number | null; cpuUsPerDeltaSteady: number | null; pgCpuUsPerSecond: number | null; failed: number | null }> = {};
    for (const ms of [INTERVAL, '0']) {
      const base: Base = { target: 'service', provider: 'provider_c', persist: true, k, rate, scenario: 'stream', variant: `checkpoint-${ms}` };
      let pgPerSecond: number | null = null;
      const row = await run(base, () => c.withService(c.sim.urls, c.dbUrl, k * 2 + 1000, async (svc) => {
        const m = await measure(svc.pid, c.sim.child.pid, {
          mode: 'streams', host: '127.0.0.1', port: svc.port, path: '/v1/chat-completions/stream', body: serviceBody('provider_c', true, deltas, rate), kind: 'sse', k, deltas, rate, startsPerSec: STARTS,
        }, c.pgMeter);
        pgPerSecond = m.pgCpuUs === null ? null : r2(m.pgCpuUs / m.result.seconds);
        return { ...toRow(base, m, undefined, `CHECKPOINT_MS=${ms}`), pgCpuUsPerSecond: pgPerSecond };
      }, undefined, { CHECKPOINT_MS: ms }));
      figures[`checkpointMs${ms}`] = { cpuUsPerDelta: row?.cpuUsPerDelta ?? null, cpuUsPerDeltaSteady: row?.cpuUsPerDeltaSteady ?? null, pgCpuUsPerSecond: pgPerSecond, failed: row?.failed ?? null };
    }
    const on = figures[`checkpointMs${INTERVAL}`]!;
    const off = figures.checkpointMs0!;
    const ratio = on.cpuUsPerDelta && off.cpuUsPerDelta ? r2(on.cpuUsPerDelta / off.cpuUsPerDelta) : null;
    out[`k${k}`] = {
      step: { k, rate, deltas }, ...figures, onOverOff: ratio,
      // The Postgres backends' CPU the checkpoints add, per second of the job (the rest is the starts' and answers' statements).
      pgCpuUsPerSecondForCheckpoints: on.pgCpuUsPerSecond !== null && off.pgCpuUsPerSecond !== null ? r2(on.pgCpuUsPerSecond - off.pgCpuUsPerSecond) : null,
      pass: ratio !== null && ratio <= 1.05,
    };
  }
  return out;
}
