// Client and Postgres CPU of a persisted start's two statements (createChat with its LlmCall, then
// finishLlmCallWithMessage), unnamed vs named (src/db/prepared.ts), alternating twice. Postgres CPU
// is summed over every postgres process on the machine, so run it on a quiet one:
//   node --import tsx test/load/pg-named.ts   (N=3000 starts per round, 20 at a time)
import { randomUUID } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import pg from 'pg';
import { migrate } from '../../src/db/migrate.ts';
import { usePreparedStatements } from '../../src/db/prepared.ts';
import { createChat } from '../../src/store/chats.ts';
import { finishLlmCallWithMessage } from '../../src/store/llm-calls.ts';

const ticks = () => {
  let t = 0;
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const cmd = readFileSync(`/proc/${p}/comm`, 'utf8').trim();
      if (!cmd.startsWith('postgres') && !cmd.startsWith('postmaster')) continue;
      const f = readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ');
      t += Number(f[11]) + Number(f[12]);
    } catch {}
  }
  return t * 10_000; // µs (100 Hz)
};

const admin = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
const dbName = `pgnamed_${process.pid}`;
await admin.query(`CREATE DATABASE ${dbName}`);
const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}`, max: 10 });
await migrate(pool);
const N = Number(process.env.N ?? 3000);
const namedPool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:5432/${dbName}`, max: 10 });
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
await admin.query(`DROP DATABASE ${dbName}`);
await admin.end();
