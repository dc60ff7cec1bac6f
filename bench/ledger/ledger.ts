// The ledger (issue 25): where one persisted start and one relayed delta spend their CPU, stage by stage,
// each stage measured by a micro-benchmark of that stage alone, printed as Markdown tables to compare with
// the CPU per start and per delta that `make bench` measures for the whole service.
//
//   node --import tsx bench/ledger/ledger.ts            (LEDGER_OPS=2000: operations per round; Postgres
//                                                       at BENCH_DATABASE_URL or 127.0.0.1:5432 for the statements)
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopAll } from '../../test/helpers/procs.ts';
import type { Row } from '../load/measure.ts';
import { deltaLedger } from './delta.ts';
import { startLedger } from './start.ts';
import { wakeUpStage } from './wake.ts';
import { f, sum, table, type Stage } from './timing.ts';

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

try {
  const load = os.loadavg()[0]!.toFixed(2);
  const startStages = await startLedger();
  const ops = Number(process.env.LEDGER_OPS ?? 2000);
  startStages.push(await wakeUpStage('start', benchRow('start').row?.wakeUpsPerStart ?? null, startStages, ops));
  const deltaStages = await deltaLedger();
  deltaStages.push(await wakeUpStage('delta', benchRow('delta').row?.wakeUpsPerDeltaSteady ?? null, deltaStages, ops));
  console.log(`Ledger, ${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} cores, load ${load} → ${os.loadavg()[0]!.toFixed(2)}\n`);
  console.log(table('One persisted start', startStages));
  console.log(compare(startStages, 'start'));
  console.log(table('One relayed delta', deltaStages));
  console.log(compare(deltaStages, 'delta'));
} finally {
  await stopAll();
}
