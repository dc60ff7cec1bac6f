// What a persisted chat run's start costs in the database (issue 38, "one round trip per start"): the
// statements the run's prepare (actors/run-storage.ts) sends per start, counted on the service's own
// pool, for a new chat and for an existing chat whose client sends its whole history (the usual case:
// every later turn), on Postgres and the embedded PGlite; on Postgres also each start's CPU in this
// process and in its backend, paced as the ledger's stages are (one every 2 ms).
//
//   node --import tsx bench/ledger/start-statements.ts      (START_OPS=200 starts per round)
//
// The counts are exact; the CPU figures move with the machine's load, so read them only against each
// other in one run.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { prepareChat, type ChatStorageRequest } from '../../actors/run-storage.ts';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';
import type { InputMessage } from '../../src/schemas.ts';
import { createChat } from '../../src/store/chats.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { countQueries } from '../../test/helpers/count-queries.ts';
import { fakeDeps } from '../../test/helpers/fake-deps.ts';
import { pgCpuMeter } from '../load/pg-cpu.ts';
import { createBenchDb } from '../load/targets.ts';
import { f, time } from './timing.ts';

const N = Number(process.env.START_OPS ?? 200);

/** A chat of `turns` stored question/answer pairs, and the history its client sends for the next turn. */
async function storedChat(db: Database, turns: number): Promise<{ chatId: string; history: InputMessage[] }> {
  const chat = await createChat(db.pool, { enabledTools: [] });
  const history: InputMessage[] = [];
  for (let t = 0; t < turns; t++) {
    const q = { role: 'user' as const, content: `question ${t} ${'words '.repeat(20)}` };
    const a = { role: 'assistant' as const, content: `answer ${t} ${'words '.repeat(60)}` };
    await appendMessages(db.pool, chat.id, [q, a]);
    history.push(q, a);
  }
  history.push({ role: 'user', content: 'load 1\nSIM {"deltas":1}' });
  return { chatId: chat.id, history };
}

interface Kind {
  name: string;
  /** The next start's request (a fresh call id, and a chat of its own for a new chat). */
  next(): Promise<ChatStorageRequest>;
}

const request = (chatId: string, messages: InputMessage[], createChat: boolean): ChatStorageRequest =>
  ({ chatId, createChat, storeChat: true, callId: randomUUID(), provider: 'provider_c', model: 'm', messages });

function kinds(db: Database): Kind[] {
  const existing = (turns: number): Kind => ({
    name: `existing chat, ${turns} stored turns, the whole history sent`,
    // A chat per start: each is the chat's next turn as a client sends it (its transcript not yet grown).
    next: async () => {
      const { chatId, history } = await storedChat(db, turns);
      return request(chatId, history, false);
    },
  });
  return [
    { name: 'new chat, one input message', next: async () => request(randomUUID(), [{ role: 'user', content: 'load 1\nSIM {"deltas":1}' }], true) },
    existing(1),
    existing(10),
  ];
}

async function measure(db: Database, label: string, pgCpu?: () => Promise<() => Promise<number>>): Promise<void> {
  const deps = { ...fakeDeps(), pool: db.pool };
  for (const kind of kinds(db)) {
    const probe = await kind.next();
    const { queries, checkouts } = await countQueries(db.pool, () => prepareChat(probe, deps));
    const first = queries.map((q) => q.replace(/\s+/g, ' ').trim().slice(0, 48)).join(' | ');
    let line = `${label} | ${kind.name} | ${queries.length} statement(s), ${checkouts} transaction checkout(s) | ${first}`;
    if (pgCpu) {
      // Made before the timing: a request per start (the warm-up's and five rounds'), each used once.
      const reqs: ChatStorageRequest[] = [];
      for (let i = 0; i < 10 + 6 * N; i++) reqs.push(await kind.next());
      let used = 0;
      const s = await time(kind.name, () => prepareChat(reqs[used++]!, deps), { ops: N, paced: true, warm: 10 }, pgCpu);
      line += ` | this process ${f(s.cpuUs)} µs, Postgres ${f(s.otherUs)} µs per start (paced)`;
    }
    console.log(line);
  }
}

async function main(): Promise<void> {
  const scratch = await createBenchDb();
  if (scratch.url) {
    const db = await openDatabase({ DATABASE_URL: scratch.url, DATA_DIR: '/nonexistent' }, { poolMax: 1 });
    const meter = await pgCpuMeter(scratch.url);
    try {
      await measure(db, 'postgres', async () => (await meter.start()).stop);
    } finally {
      await meter.close();
      await db.close();
      await scratch.drop();
    }
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'start-statements-'));
  try {
    const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
    try {
      await measure(db, 'pglite');
    } finally {
      await db.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
