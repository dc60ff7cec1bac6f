// The ledger (issue 25): where one persisted start and one relayed delta spend their CPU, stage by stage,
// each stage measured by a micro-benchmark of that stage alone, printed as Markdown tables to compare with
// the CPU per start and per delta that `make bench` measures for the whole service.
//
//   node --import tsx bench/ledger/ledger.ts            (LEDGER_OPS=2000: operations per round; Postgres
//                                                       at BENCH_DATABASE_URL or 127.0.0.1:5432 for the statements)
import os from 'node:os';
import { stopAll } from '../../test/helpers/procs.ts';
import { deltaLedger } from './delta.ts';
import { startLedger } from './start.ts';
import { table } from './timing.ts';

try {
  const load = os.loadavg()[0]!.toFixed(2);
  const startStages = await startLedger();
  const deltaStages = await deltaLedger();
  console.log(`Ledger, ${new Date().toISOString()}, Node ${process.version}, ${os.cpus().length} cores, load ${load} → ${os.loadavg()[0]!.toFixed(2)}\n`);
  console.log(table('One persisted start', startStages));
  console.log(table('One relayed delta', deltaStages));
} finally {
  await stopAll();
}
