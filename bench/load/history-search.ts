// History search at size: 100,000 messages over 5,000 chats (plus 1,000 answered searches), loaded in
// bulk through SQL, then p50/p99 of searchHistory (the store call GET /v1/workspace-items?q= makes)
// over a mix of queries, on the real Postgres and on PGlite; and what the message indexes cost (sql/006's
// tsvector and GIN index, sql/008's seq index): bytes per message, the time of one stored message with
// and without them, and their backfill.
//
// `make bench` runs it after the streams (BENCH_HISTORY=0 skips it); alone:
//   node --import tsx bench/load/history-search.ts
// Knobs (env): HISTORY_CHATS=5000 HISTORY_MESSAGES_PER_CHAT=20 HISTORY_QUERIES=400 HISTORY_DBS=postgres,embedded
// HISTORY_CANDIDATES=1000 (matches ranked per field, the store's CANDIDATES; "all" ranks every match, as
// before sql/008, to compare)
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { CANDIDATES, searchHistory } from '../../src/store/history-search.ts';
import { round, Samples, summarize, type Summary } from './stats.ts';
import { createBenchDb } from './targets.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const env = process.env;
const CHATS = Number(env.HISTORY_CHATS ?? 5000);
const PER_CHAT = Number(env.HISTORY_MESSAGES_PER_CHAT ?? 20);
const SEARCHES = Math.round(CHATS / 5);
const QUERIES = Number(env.HISTORY_QUERIES ?? 400);
const INSERTS = 500;
const DBS = (env.HISTORY_DBS ?? 'postgres,embedded').split(',');
// null is LIMIT NULL in the statement: no bound.
const RANKED = env.HISTORY_CANDIDATES === 'all' ? null : Number(env.HISTORY_CANDIDATES ?? CANDIDATES);
const search = (db: Database, q: string) => searchHistory(db.pool, q, 50, ADMIN_USER_ID, RANKED);

// A Zipf vocabulary (frequency ∝ 1/rank, as in natural text: rank 0 is ~9% of all words, like "the")
// of pronounceable made-up words: word r is r's base-16 digits as syllables.
const VOCABULARY = 50_000;
const SYLLABLES = ['ka', 'lo', 'mi', 'nu', 'pe', 'ra', 'si', 'to', 'va', 'ze', 'bo', 'di', 'fu', 'ge', 'ha', 'ju'];
const word = (r: number) => {
  let w = '';
  for (let n = r, i = 0; i < 3 || n > 0; i++, n = Math.floor(n / 16)) w += SYLLABLES[n % 16];
  return w;
};
const WORDS = Array.from({ length: VOCABULARY }, (_, r) => word(r));

// n random words drawn by Zipf rank (floor(e^(u·ln V)) is k with probability ln((k+1)/k) ≈ 1/k),
// joined by spaces (random() is seeded per load).
const text = (n: string) =>
  `(SELECT string_agg(($1::text[])[floor(exp(random() * ln(${VOCABULARY})))::int], ' ') FROM generate_series(1, ${n}) g)`;

type QueryKind = 'rare word' | 'mid word' | 'two words' | 'three words' | 'typed prefix' | 'stop word alone';

/**
 * A mix a person might type: mostly a word or two they remember, sometimes half a word being typed, and
 * rarely (2%) one of the five most common words alone (each is in 25–90% of messages: the worst case).
 */
function queryMix(n: number): { kind: QueryKind; q: string }[] {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const pick = (from: number, to: number) => WORDS[from + Math.floor(rand() * (to - from))]!;
  const kinds: [QueryKind, () => string, number][] = [
    ['rare word', () => pick(5000, VOCABULARY), 0.25],
    ['mid word', () => pick(100, 5000), 0.2],
    ['two words', () => `${pick(20, 5000)} ${pick(20, 5000)}`, 0.2],
    ['three words', () => `${pick(5, 500)} ${pick(20, 5000)} ${pick(20, 5000)}`, 0.1],
    ['typed prefix', () => `${pick(100, 5000)} ${pick(100, VOCABULARY).slice(0, 4)}`, 0.23],
    ['stop word alone', () => pick(0, 5), 0.02],
  ];
  return Array.from({ length: n }, () => {
    let x = rand();
    for (const [kind, make, share] of kinds) if ((x -= share) < 0 || kind === 'stop word alone') return { kind, q: make() };
    throw new Error('unreachable');
  });
}

export interface HistoryBenchResult {
  database: 'postgres' | 'embedded';
  chats: number;
  messages: number;
  loadSeconds: number;
  /** 1-minute load average before the queries: the machine is shared, and its load shows here. */
  loadAvg1: number;
  /** All queries; all but the stop-word-alone ones; then per kind (meanItems: at most the default limit 50). */
  query: Summary;
  queryWithoutStopWords: Summary;
  byKind: Record<string, Summary & { meanItems: number }>;
  /** Matches ranked per field (null: all). */
  candidates: number | null;
  /** Per stored message: its stored tsvector, its share of the GIN and seq indexes, and (to compare) its text. */
  tsvectorBytesPerMessage: number;
  indexBytesPerMessage: number;
  seqIndexBytesPerMessage: number;
  contentBytesPerMessage: number;
  insertMsWithIndex: number;
  insertMsWithoutIndex: number;
  backfillSeconds: number;
}

async function load(db: Database): Promise<number> {
  const began = performance.now();
  await db.pool.query('SELECT setseed(0.42)');
  // In slices, so PGlite (one WASM heap) never holds a huge statement's intermediate rows at once.
  for (let from = 0; from < CHATS; from += 500) {
    const n = Math.min(500, CHATS - from);
    await db.pool.query(
      `WITH c AS (
         INSERT INTO chats (id, title, created_at, updated_at)
         SELECT gen_random_uuid()::text, ${text('2 + (random() * 3)::int + 0 * i')}, t, t
           FROM generate_series(1, ${n}) i, LATERAL (SELECT now() - random() * interval '365 days' AS t) ts
         RETURNING id)
       INSERT INTO messages (id, chat_id, role, content)
       SELECT gen_random_uuid()::text, c.id, CASE WHEN j % 2 = 1 THEN 'user' ELSE 'assistant' END,
              ${text('CASE WHEN j % 2 = 1 THEN 4 + (random() * 26)::int ELSE 30 + (random() * 120)::int END')}
         FROM c, generate_series(1, ${PER_CHAT}) j`,
      [WORDS],
    );
  }
  await db.pool.query(
    `INSERT INTO searches (id, query, normalized_query, answer_text, updated_at)
     SELECT gen_random_uuid()::text, q, lower(q), ${text('40 + (random() * 80)::int + 0 * length(q)')}, now() - random() * interval '365 days'
       FROM (SELECT ${text('2 + (random() * 4)::int + 0 * i')} AS q FROM generate_series(1, ${SEARCHES}) i) s`,
    [WORDS],
  );
  await db.pool.query('VACUUM ANALYZE chats');
  await db.pool.query('VACUUM ANALYZE messages');
  await db.pool.query('VACUUM ANALYZE searches');
  return (performance.now() - began) / 1000;
}

async function queries(db: Database): Promise<Pick<HistoryBenchResult, 'loadAvg1' | 'query' | 'queryWithoutStopWords' | 'byKind'>> {
  const mix = queryMix(QUERIES);
  for (const { q } of mix.slice(0, 40)) await search(db, q); // warm caches and plans
  const loadAvg1 = round(os.loadavg()[0], 1)!;
  const all = new Samples();
  const usual = new Samples();
  const kinds = new Map<string, { s: Samples; items: number }>();
  for (const { kind, q } of mix) {
    const t0 = performance.now();
    const items = await search(db, q);
    const ms = performance.now() - t0;
    all.push(ms);
    if (kind !== 'stop word alone') usual.push(ms);
    const k = kinds.get(kind) ?? { s: new Samples(), items: 0 };
    k.s.push(ms);
    k.items += items.length;
    kinds.set(kind, k);
  }
  const byKind = Object.fromEntries([...kinds].map(([kind, k]) => [kind, { ...summarize(k.s), meanItems: round(k.items / k.s.n, 1)! }]));
  return { loadAvg1, query: summarize(all), queryWithoutStopWords: summarize(usual), byKind };
}

/** Mean ms of storing one typical message (appendMessages, as a run does) in INSERTS chats. */
async function insertCost(db: Database): Promise<number> {
  const { rows } = await db.pool.query<{ id: string }>('SELECT id FROM chats ORDER BY random() LIMIT $1', [INSERTS]);
  const content = Array.from({ length: 80 }, (_, i) => WORDS[(i * 37) % 5000]).join(' ');
  const t0 = performance.now();
  for (const { id } of rows) await appendMessages(db.pool, id, [{ role: 'assistant', content }], ADMIN_USER_ID);
  return (performance.now() - t0) / rows.length;
}

// The statements of sql/006 and sql/008 that concern messages (006's column and index, 008's index),
// comments dropped.
const MESSAGE_DDL = ['006_history_search.sql', '008_history_search_bounded.sql'].flatMap((file) =>
  readFileSync(new URL(`../../sql/${file}`, import.meta.url), 'utf8')
    .replace(/--.*$/gm, '')
    .split(';')
    .map((st) => st.trim())
    .filter((st) => /^(ALTER TABLE|CREATE INDEX \w+ ON) messages\b/.test(st)),
);

async function indexCost(db: Database): Promise<Pick<HistoryBenchResult, 'tsvectorBytesPerMessage' | 'indexBytesPerMessage' | 'seqIndexBytesPerMessage' | 'contentBytesPerMessage' | 'insertMsWithIndex' | 'insertMsWithoutIndex' | 'backfillSeconds'>> {
  if (MESSAGE_DDL.length !== 3) throw new Error(`expected 3 statements about messages in sql/006 and 008, found ${MESSAGE_DDL.length}`);
  const { rows } = await db.pool.query<{ idx: string; seq: string; tsv: string; content: string; n: string }>(
    `SELECT pg_relation_size('messages_search_idx') AS idx, pg_relation_size('messages_seq_idx') AS seq, sum(pg_column_size(search_tsv)) AS tsv,
            sum(pg_column_size(content)) AS content, count(*) AS n FROM messages`,
  );
  const { idx, seq, tsv, content, n } = rows[0]!;
  await insertCost(db); // warm-up: the first inserts pay for cold pages, not for the index
  const withIndex = await insertCost(db);
  await db.pool.query('DROP INDEX messages_seq_idx');
  await db.pool.query('DROP INDEX messages_search_idx');
  await db.pool.query('ALTER TABLE messages DROP COLUMN search_tsv');
  const withoutIndex = await insertCost(db);
  const t0 = performance.now();
  for (const st of MESSAGE_DDL) await db.pool.query(st); // what sql/006 and 008 do to the rows already there
  const backfillSeconds = (performance.now() - t0) / 1000;
  const per = (bytes: string) => Math.round(Number(bytes) / Number(n));
  return {
    tsvectorBytesPerMessage: per(tsv),
    indexBytesPerMessage: per(idx),
    seqIndexBytesPerMessage: per(seq),
    contentBytesPerMessage: per(content),
    insertMsWithIndex: round(withIndex, 3)!,
    insertMsWithoutIndex: round(withoutIndex, 3)!,
    backfillSeconds: round(backfillSeconds, 1)!,
  };
}

async function benchOne(database: 'postgres' | 'embedded', log: (msg: string) => void): Promise<HistoryBenchResult | { database: string; skipped: string }> {
  const scratch = database === 'postgres' ? await createBenchDb() : null;
  if (scratch && !scratch.url) return { database, skipped: 'no Postgres at BENCH_DATABASE_URL' };
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'history-bench-'));
  const db = await openDatabase({ DATABASE_URL: scratch?.url ?? undefined, DATA_DIR: dataDir });
  try {
    log(`history search (${database}): loading ${CHATS} chats × ${PER_CHAT} messages and ${SEARCHES} searches`);
    const loadSeconds = await load(db);
    const messages = Number((await db.pool.query<{ n: string }>('SELECT count(*) AS n FROM messages')).rows[0]!.n);
    log(`history search (${database}): loaded ${messages} messages in ${loadSeconds.toFixed(1)} s; ${QUERIES} queries`);
    const q = await queries(db);
    log(`history search (${database}): p50 ${q.query.p50} ms, p99 ${q.query.p99} ms (without stop words alone: ${q.queryWithoutStopWords.p99} ms); measuring the write cost`);
    const cost = await indexCost(db);
    return { database, chats: CHATS, messages, candidates: RANKED, loadSeconds: round(loadSeconds, 1)!, ...q, ...cost };
  } finally {
    await db.close();
    rmSync(dataDir, { recursive: true, force: true });
    await scratch?.drop();
  }
}

export async function runHistorySearchBench(log: (msg: string) => void): Promise<(HistoryBenchResult | { database: string; skipped: string })[]> {
  const out = [];
  for (const database of DBS) out.push(await benchOne(database as 'postgres' | 'embedded', log));
  for (const r of out) log(`history search: ${JSON.stringify(r)}`);
  return out;
}

if (import.meta.filename === process.argv[1]) {
  const began = performance.now();
  const log = (msg: string) => console.error(`[history ${((performance.now() - began) / 1000).toFixed(0).padStart(3)}s] ${msg}`);
  runHistorySearchBench(log).then(
    (r) => console.log(JSON.stringify(r, null, 2)),
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}
