// The ledger (issue 25): where one persisted start and one relayed delta spend their CPU, stage by stage,
// each stage measured by a micro-benchmark of that stage alone, printed as Markdown tables to compare with
// the CPU per start and per delta that `make bench` measures for the whole service.
//
//   node --import tsx bench/ledger/ledger.ts            (LEDGER_OPS=2000: operations per round; Postgres
//                                                       at BENCH_DATABASE_URL or 127.0.0.1:5432 for the statements)
//
// The service itself is measured before and after the stages (measured.ts; LEDGER_SERVICE=0 skips it),
// LEDGER_RUNS=N measures the stages N times (the service between) and shows each row's median run,
// and each table is compared with that, then with the last `make bench`'s row (bench/results.json).
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopAll } from '../../test/helpers/procs.ts';
import type { Row } from '../load/measure.ts';
import { deltaLedger } from './delta.ts';
import { measureService, type ServiceFigures } from './measured.ts';
import { startLedger } from './start.ts';
import { wakeUpStage } from './wake.ts';
import { f, medianRows, sum, table, type Stage } from './timing.ts';

const RESULTS = path.join(import.meta.dirname, '../results.json');

/** The row of the last `make bench` (bench/results.json) that a table is compared with, and the run's meta. */
function benchRow(per: 'start' | 'delta'): { row?: Row; meta?: { date?: string; commit?: string }; missing?: string } {
  if (!existsSync(RESULTS)) return { missing: 'no bench/results.json' };
  const { meta, runs = [] } = JSON.parse(readFileSync(RESULTS, 'utf8')) as { meta?: { date?: string; commit?: string }; runs?: Row[] };
  const row = runs.find((r) => r.target === 'service' && r.persist === true && r.variant === undefined
    && (per === 'start' ? r.scenario === 'start-rate' && r.rate === 500 : r.scenario === 'stream' && r.k === 1000));
  return row ? { row, meta } : { missing: 'no such row' };
}

/**
 * The whole service's CPU per start or per delta against a table's sum. A delta is compared with the
 * sweep's steady phase (the relay alone, every stream open, none starting), which is what the delta's
 * stages add up; the whole job's figure carries its starts.
 */
function compare(stages: Stage[], per: 'start' | 'delta'): string {
  const what = per === 'start' ? 'CPU per start from bench/results.json (scenario start-rate, rate 500, service persisted)' : 'CPU per delta, steady phase (whole job), from bench/results.json (scenario stream, K=1000, service persisted)';
  const { row, meta, missing } = benchRow(per);
  const measured = per === 'start' ? row?.cpuUsPerStart : (row?.cpuUsPerDeltaSteady ?? row?.cpuUsPerDelta);
  if (measured == null) return `compare with: ${what}: ${missing ?? 'no such figure'}`;
  const s = sum(stages, 'cpuUs');
  const whole = per === 'delta' && row?.cpuUsPerDeltaSteady != null ? ` (${f(row.cpuUsPerDelta ?? undefined)})` : '';
  return `compare with: ${what}: ${f(measured)}${whole} µs (${meta?.date ?? '?'}, commit ${meta?.commit ?? '?'}); sum ${f(s)} ÷ measured = ${(s / measured).toFixed(2)}\n`;
}

/** The sum against the service measured in this run, before and after the stages (measured.ts). */
function compareSameRun(stages: Stage[], service: ServiceFigures[], per: 'start' | 'delta'): string {
  if (service.length === 0) return `compare with: the service in this run: not measured (LEDGER_SERVICE=0, or no Postgres)`;
  const values = service.map((x) => (per === 'start' ? x.startCpuUs : x.deltaCpuUs));
  const what = per === 'start' ? 'CPU per persisted start at 500/s' : 'CPU per delta, steady phase, K = 1,000 × 20/s';
  const wakes = service.map((x) => (per === 'start' ? x.startWakeUps : x.deltaWakeUps).toFixed(3)).join(' / ');
  const s = sum(stages, 'cpuUs');
  const threads = service.map((x) => (per === 'start' ? x.startThreads : x.deltaThreads)).map((t) => (t ? `main ${f(t.main)}, actor ${f(t.actor)}, rest ${f(t.rest)}` : '?')).join(' / ');
  return `compare with: the service in this run (${what}, before / after the stages): ${values.map((v) => f(v)).join(' / ')} µs `
    + `(by thread: ${threads}), ${wakes} wake-ups per ${per}; sum ${f(s)} ÷ their mean = ${(s / mean(values)).toFixed(2)}, ÷ their median = ${(s / median(values)).toFixed(2)}`;
}

/**
 * What the service spends idling (its timers: prom-client's event-loop sampling, the pools' and the
 * heartbeat's) over one start's share of a second at 500/s: the bench's start rows count it (measure.ts
 * idleCpuUsPerStart), no stage above does.
 */
function idleStage(idleCpuUsPerS: number): Stage {
  const us = idleCpuUsPerS / START_RATE;
  return { name: 'the service idling: its timers over a start\'s 2 ms', cpuUs: us, wallUs: 1e6 / START_RATE, note: `the warm service's CPU while idle (${f(idleCpuUsPerS / 1000)} ms/s, measured.ts) ÷ ${START_RATE} starts a second` };
}

const START_RATE = 500;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

try {
  const load = os.loadavg()[0]!.toFixed(2);
  const ops = Number(process.env.LEDGER_OPS ?? 2000);
  const measureSvc = process.env.LEDGER_SERVICE !== '0';
  // LEDGER_RUNS > 1: the stages measured that many times, the service before and after each, and each
  // row the run whose figure is the median (one real measurement per row, not a mix of runs).
  const runs = Number(process.env.LEDGER_RUNS ?? 1);
  const measured = [measureSvc ? await measureService() : null];
  const startRuns: Stage[][] = [];
  const deltaRuns: Stage[][] = [];
  for (let r = 0; r < runs; r++) {
    startRuns.push(await startLedger());
    deltaRuns.push(await deltaLedger());
    measured.push(measureSvc ? await measureService() : null);
  }
  const startStages = medianRows(startRuns);
  const deltaStages = medianRows(deltaRuns);
  const service = measured.filter((x): x is ServiceFigures => x !== null);
  const wakeUps = service.length ? mean(service.map((x) => x.startWakeUps)) : (benchRow('start').row?.wakeUpsPerStart ?? null);
  startStages.push(await wakeUpStage(wakeUps, startStages, ops));
  if (service.length) startStages.push(idleStage(mean(service.map((x) => x.idleCpuUsPerS))));
  // No wake-up row for the delta: its stages that wake (the upstream read, the client write) are read
  // under the bench's load, whose wake-ups cost less than the idle timer's that the row would price them at.
  console.log(`Ledger, ${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} cores, load ${load} → ${os.loadavg()[0]!.toFixed(2)}\n`);
  console.log(table('One persisted start', startStages));
  console.log(compareSameRun(startStages, service, 'start'));
  console.log(compare(startStages, 'start'));
  console.log(table('One relayed delta', deltaStages));
  console.log(compareSameRun(deltaStages, service, 'delta'));
  console.log(compare(deltaStages, 'delta'));
} finally {
  await stopAll();
}
