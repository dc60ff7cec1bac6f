// The start baseline's SQL client (issue 48): what a persisted start writes, and nothing else. A
// minimal `pg` pool (BENCH_SQL_POOL connections, named statements as the service prepares them) runs
// each start's own statements through the store's functions, the service's text and parameters: the
// chat with its input and its running LlmCall in one statement (createChat), then the one-delta answer
// and the call's end (finishLlmCallWithMessage). Its own process, so that its CPU is read apart.
//
//   node --import tsx bench/load/sql-starts.ts <database url>
//   stdin: one {"n":…,"perSec":…} a line → stdout: {"done":n,"failed":f,"reasons":{…}} when those n starts are written
import { randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { usePreparedStatements } from '../../src/db/prepared.ts';
import { createChat } from '../../src/store/chats.ts';
import { finishLlmCallWithMessage } from '../../src/store/llm-calls.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';
import { cpuMicros, start, type Child } from '../../test/helpers/procs.ts';
import type { Beside } from './measure.ts';

export interface SqlStartsJob {
  n: number;
  perSec: number;
}

const POOL = Number(process.env.BENCH_SQL_POOL ?? 4);
/** Starts written before the first job (the statements prepared, the plans cached). */
const WARM = Number(process.env.BENCH_SQL_WARM ?? 500);

/** One persisted start's statements, as the service writes them for a one-delta answer. */
async function oneStart(db: pg.Pool, i: number): Promise<void> {
  const chatId = randomUUID();
  const callId = randomUUID();
  const content = `load ${i}\nSIM {"deltas":1,"rate":1,"stamp":true}`;
  await createChat(db, { owner: ADMIN_USER_ID, id: chatId, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content }], call: { id: callId, instanceId: null } });
  await finishLlmCallWithMessage(db, { callId, chatId, assistant: { content: `${(performance.timeOrigin + performance.now()).toFixed(3)}|` }, usage: { inputTokens: 12, outputTokens: 1, totalTokens: 13 }, latencyMs: 2 });
}

/** `n` starts at `perSec`, each begun on time whether or not the earlier ones are written (as the service's starts come). */
async function runStarts(db: pg.Pool, job: SqlStartsJob): Promise<{ done: number; failed: number; reasons: Record<string, number> }> {
  const out = { done: 0, failed: 0, reasons: {} as Record<string, number> };
  const all: Promise<void>[] = [];
  const gap = 1000 / job.perSec;
  const t0 = performance.now();
  for (let i = 0; i < job.n; ) {
    const due = Math.min(job.n, Math.floor((performance.now() - t0) / gap) + 1);
    for (; i < due; i++) {
      all.push(oneStart(db, i).then(() => void out.done++, (err: Error) => {
        out.failed++;
        out.reasons[err.message.slice(0, 120)] = (out.reasons[err.message.slice(0, 120)] ?? 0) + 1;
      }));
    }
    if (i < job.n) await new Promise((r) => setTimeout(r, Math.max(1, gap)));
  }
  await Promise.all(all);
  return out;
}

/** The SQL client as a child process, ready once warmed; `beside(job)` runs a job beside a measured one. */
export async function startSqlClient(dbUrl: string): Promise<{ child: Child; beside(job: SqlStartsJob): Beside }> {
  const waiting: Array<(line: string) => void> = [];
  const { child } = await start('sql-starts', process.execPath, ['--import', 'tsx', import.meta.filename, dbUrl], {
    stdin: true,
    ready: (l) => l.startsWith('{"ready"'),
    readyTimeoutMs: 120_000,
    onLine: (l) => void (l.startsWith('{"done"') && waiting.shift()?.(l)),
  });
  return {
    child,
    beside: (job) => ({
      async start() {
        const c0 = cpuMicros(child.pid);
        const done = new Promise<string>((resolve) => waiting.push(resolve));
        child.proc.stdin!.write(JSON.stringify(job) + '\n');
        return {
          async stop() {
            const r = JSON.parse(await done) as { failed: number; reasons: Record<string, number> };
            if (r.failed) throw new Error(`the SQL client failed ${r.failed} starts: ${JSON.stringify(r.reasons)}`);
            return cpuMicros(child.pid) - c0;
          },
        };
      },
    }),
  };
}

if (process.argv[1] === import.meta.filename && process.argv[2]) {
  const db = new pg.Pool({ connectionString: process.argv[2], max: POOL });
  usePreparedStatements(db);
  const warm = await runStarts(db, { n: WARM, perSec: 500 });
  process.stdout.write(JSON.stringify({ ready: true, warm }) + '\n');
  let chain = Promise.resolve();
  createInterface({ input: process.stdin }).on('line', (line) => {
    chain = chain.then(async () => void process.stdout.write(JSON.stringify(await runStarts(db, JSON.parse(line) as SqlStartsJob)) + '\n'));
  }).on('close', () => void chain.then(() => db.end()).then(() => process.exit(0)));
}
