// How a checkpoint's cost grows with the answer (issue 48): 4 runs each streaming a 6 MB answer, one
// checkpoint statement per 100 KB of new text per run, timed at 1, 3 and 6 MB (the median of the 10
// statements up to each) and summed over the answers' life, with the statement before sql/018 (each
// run's whole text rewritten: `left(checkpoint_text, from) || text`, `length()` over it) against the
// chunk statement of now. And
// the timer's own work per tick on the event loop: reading the new text of a 6 MB answer held as the
// replay buffer holds it (30-character deltas), by slicing the whole text as before or by newText().
//
//   node --import tsx bench/ledger/checkpoint-growth.ts            # the embedded PGlite (CKPT_STEP: new text per run and statement)
//   node --import tsx bench/ledger/checkpoint-growth.ts postgres://postgres@127.0.0.1:5432/postgres
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { EventBuffer } from '../../actors/runtime/event-buffer.ts';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';
import { createChat } from '../../src/store/chats.ts';
import { writeCheckpoints } from '../../src/store/checkpoints.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const RUNS = 4;
const ANSWER = 6_000_000;
const STEP = Number(process.env.CKPT_STEP ?? 100_000);
const MARKS = [1_000_000, 3_000_000, 6_000_000];

// The statement of src/store/checkpoints.ts before sql/018, as it was.
const OLD = `UPDATE llm_calls l
       SET checkpoint_text = left(coalesce(l.checkpoint_text, ''), v.from_chars) || v.text,
           checkpoint_token = v.token, checkpoint_at = now()
      FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[]) AS v(call_id, chat_id, token, from_chars, text),
           chats c
     WHERE l.id = ANY ($1::text[]) AND l.id = v.call_id AND l.status = 'running'
       AND c.id = v.chat_id AND c.run_token = v.token
       AND length(coalesce(l.checkpoint_text, '')) >= v.from_chars
    RETURNING l.id`;

/** Text that compresses about as prose does: words from a vocabulary, in random order. */
const WORDS = Array.from({ length: 2_000 }, () => randomBytes(4).toString('base64url').slice(0, 3 + Math.floor(Math.random() * 6)));
function prose(units: number): string {
  let s = '';
  while (s.length < units) s += WORDS[Math.floor(Math.random() * WORDS.length)] + ' ';
  return s.slice(0, units);
}

async function open(url: string | undefined): Promise<{ db: Database; done(): Promise<void> }> {
  if (!url) {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'ckpt-growth-'));
    const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dir });
    return { db, done: async () => (await db.close(), await rm(dir, { recursive: true, force: true })) };
  }
  const name = `ckpt_growth_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  const db = await openDatabase({ DATABASE_URL: u.toString(), DATA_DIR: '' });
  return {
    db,
    done: async () => {
      await db.close();
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

async function runs(db: Database) {
  const out = [];
  for (let i = 0; i < RUNS; i++) {
    const call = { id: randomUUID(), instanceId: 'bench' };
    const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'q' }], call });
    out.push({ callId: call.id, chatId: chat.id, runToken: 1 });
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** ms per statement at each mark (the median of the 10 statements up to it), and in all, for one way of writing. */
async function timeStatements(db: Database, write: (ids: Awaited<ReturnType<typeof runs>>, at: number, texts: string[]) => Promise<unknown>) {
  const ids = await runs(db);
  const at: Record<number, number> = {};
  const times: number[] = [];
  let total = 0;
  for (let done = 0; done < ANSWER; done += STEP) {
    const texts = ids.map(() => prose(STEP));
    const t0 = performance.now();
    await write(ids, done, texts);
    const ms = performance.now() - t0;
    times.push(ms);
    total += ms;
    for (const m of MARKS) if (done < m && done + STEP >= m) at[m] = median(times.slice(-10));
  }
  await db.pool.query(`UPDATE llm_calls SET status = 'failed' WHERE id = ANY ($1::text[])`, [ids.map((r) => r.callId)]);
  return { at, total };
}

/** ms of the event loop per tick to read a 6 MB answer's new 100 KB, as before and now. */
function readCost(): { before: number; now: number } {
  const measure = (read: (b: EventBuffer, units: number) => string) => {
    const buffer = new EventBuffer();
    let units = 0;
    let last = 0;
    const delta = prose(30);
    for (let done = 0; done < ANSWER; done += STEP) {
      for (let i = 0; i < STEP / 30; i++) buffer.appendText(delta);
      const t0 = performance.now();
      units += read(buffer, units).length;
      last = performance.now() - t0;
    }
    return last;
  };
  const before = measure((b, units) => {
    const text = b.deltaText;
    text.charCodeAt(text.length - 1);
    return text.slice(units, text.length);
  });
  const now = measure((b) => b.newText());
  return { before, now };
}

const url = process.argv[2];
const { db, done } = await open(url);
try {
  const old = await timeStatements(db, (ids, at, texts) =>
    // `from` in code points: the text here is ASCII, so units.
    db.pool.query(OLD, [ids.map((r) => r.callId), ids.map((r) => r.chatId), ids.map((r) => r.runToken), ids.map(() => at), texts]),
  );
  const chunks = await timeStatements(db, (ids, at, texts) => writeCheckpoints(db.pool, ids.map((r, i) => ({ ...r, at, text: texts[i]! }))));
  const read = readCost();
  const row = (name: string, r: typeof old) =>
    `| ${name} | ${MARKS.map((m) => r.at[m]!.toFixed(1)).join(' | ')} | ${(r.total / 1000).toFixed(1)} s |`;
  console.log(`${url ? 'Postgres' : 'PGlite'}: ${RUNS} runs × ${ANSWER / 1e6} MB, a statement per ${STEP / 1000} KB of new text per run`);
  console.log(`| statement | ms at 1 MB | at 3 MB | at 6 MB | all ${Math.ceil(ANSWER / STEP)} statements |`);
  console.log('|---|--:|--:|--:|--:|');
  console.log(row('before (whole text rewritten)', old));
  console.log(row('chunks (new text only)', chunks));
  console.log(`reading a 6 MB answer's new ${STEP / 1000} KB on the event loop: before ${read.before.toFixed(2)} ms, now ${read.now.toFixed(2)} ms`);
} finally {
  await done();
}
