// Client and Postgres CPU of a persisted start's two statements (createChat with its LlmCall, then
// finishLlmCallWithMessage), unnamed vs named (src/db/prepared.ts), alternating twice. Postgres CPU
// is the whole server's (the postmaster and its children), so run it on a quiet machine:
//   node --import tsx bench/load/pg-named.ts   (N=3000 starts per round, 20 at a time)
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { usePreparedStatements } from '../../src/db/prepared.ts';
import { createChat } from '../../src/store/chats.ts';
import { finishLlmCallWithMessage } from '../../src/store/llm-calls.ts';
import { cpuMicros } from '../../test/helpers/procs.ts';
import { createBenchDb } from './targets.ts';

const bench = await createBenchDb();
if (!bench.url) throw new Error('pg-named measures a real Postgres (BENCH_DATABASE_URL or 127.0.0.1:5432)');
const pool = new pg.Pool({ connectionString: bench.url, max: 10 });
await migrate(pool);
// The postmaster (the parent of this session's backend) and its children: the whole server's CPU.
const backend = (await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
const postmaster = Number(readFileSync(`/proc/${backend}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
const ticks = () => cpuMicros(postmaster);
const N = Number(process.env.N ?? 3000);
const namedPool = new pg.Pool({ connectionString: bench.url, max: 10 });
usePreparedStatements(namedPool);
const wrap = (named: boolean) => (named ? namedPool : pool);
for (const named of [false, true, false, true]) {
  const db = wrap(named);
  const run = async () => {
    const id = randomUUID();
    const callId = randomUUID();
    await createChat(db, { id, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'hello there, a question' }], call: { id: callId, instanceId: 'x' } });
    await finishLlmCallWithMessage(db, { callId, chatId: id, assistant: { content: 'an answer of a few words' }, usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 }, latencyMs: 5 });
  };
  for (let i = 0; i < 200; i++) await run();
  const c0 = process.cpuUsage();
  const s0 = ticks();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: 20 }, async () => { while (next++ < N) await run(); }));
  const c = process.cpuUsage(c0);
  const s = ticks() - s0;
  console.log(`${named ? 'named  ' : 'unnamed'} client ${((c.user + c.system) / N).toFixed(0)} µs/start, postgres ${(s / N).toFixed(0)} µs/start, wall ${((performance.now() - t0) / N * 1000).toFixed(0)} µs/start`);
}
await pool.end();
await namedPool.end();
await bench.drop();
