import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import {
  createSearch,
  deleteSearch,
  findLatestByNormalizedQuery,
  getSearch,
  getSearchDetail,
  hasStoredResults,
  listSearches,
  normalizeQuery,
  saveSearchRun,
  type SearchRun,
} from '../../src/store/searches.ts';
import type { SearchResultItem } from '../../src/base/types.ts';
import { testDatabases } from '../helpers/db.ts';
import { setStarred } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';


const result = (n: number): SearchResultItem => ({
  url: `https://example.com/${n}`,
  title: `Result ${n}`,
  snippet: 's',
  summary: null,
  publishedDate: null,
  author: null,
  score: 0.5,
  favicon: null,
  image: null,
});

const run = (over: Partial<SearchRun> = {}): SearchRun => ({
  query: 'Cats',
  requestId: 'r1',
  latencyMs: 120,
  error: null,
  answerText: 'Cats are mammals.',
  answerRequestId: 'a1',
  answerCitations: [{ url: 'https://example.com/1', title: 'One', author: null, publishedDate: null, text: 'x' }],
  answerError: null,
  results: [result(1), result(2)],
  ...over,
});

for (const target of await testDatabases()) {
  describe(`searches store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('creates a search and gives a never-run detail the string defaults', async () => {
      const s = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: '  Rust async  ' });
      assert.deepEqual({ ...s, id: '', createdAt: '', updatedAt: '' }, {
        id: '', title: null, query: 'Rust async', createdAt: '', updatedAt: '', starred: false, starredAt: null,
      });
      assert.deepEqual(await getSearch(db.pool, s.id, ADMIN_USER_ID), s);
      const detail = await getSearchDetail(db.pool, s.id, ADMIN_USER_ID);
      assert.deepEqual({ ...detail, id: '', createdAt: '', updatedAt: '' }, {
        id: '', title: 'Rust async', query: 'Rust async', createdAt: '', updatedAt: '', starred: false, starredAt: null,
        requestId: '', latencyMs: 0, error: null, answerText: null, answerRequestId: null, answerCitations: [],
        answerError: null, results: [],
      });
      assert.equal(hasStoredResults(detail!), false);
      const empty = await getSearchDetail(db.pool, (await createSearch(db.pool, { owner: ADMIN_USER_ID })).id, ADMIN_USER_ID);
      assert.deepEqual([empty?.title, empty?.query], ['', '']);
      const titled = await getSearchDetail(db.pool, (await createSearch(db.pool, { owner: ADMIN_USER_ID, title: ' T ', query: 'q' })).id, ADMIN_USER_ID);
      assert.deepEqual([titled?.title, titled?.query], ['T', 'q']);
    });

    it('stores a run, then replaces it with the next run', async () => {
      const s = await createSearch(db.pool, { owner: ADMIN_USER_ID });
      await clockPast(s.updatedAt);
      const first = await saveSearchRun(db.pool, s.id, run(), ADMIN_USER_ID);
      assert.ok(first);
      assert.equal(first.title, 'Cats'); // an untitled search takes its query as title
      assert.equal((await getSearch(db.pool, s.id, ADMIN_USER_ID))?.title, 'Cats');
      assert.deepEqual(first.results, [result(1), result(2)]);
      assert.equal(first.answerCitations.length, 1);
      assert.deepEqual([first.requestId, first.latencyMs, first.answerRequestId], ['r1', 120, 'a1']);
      assert.ok(first.updatedAt > s.updatedAt);
      assert.equal(hasStoredResults(first), true);
      assert.deepEqual(await getSearchDetail(db.pool, s.id, ADMIN_USER_ID), first);

      await clockPast(first.updatedAt);
      const second = await saveSearchRun(
        db.pool,
        s.id,
        run({ query: 'Dogs', title: 'Dogs!', error: 'search failed', results: [], answerText: null, answerCitations: [], answerError: 'no answer', requestId: null }), ADMIN_USER_ID,
      );
      assert.deepEqual(
        [second?.title, second?.query, second?.results, second?.answerText, second?.error, second?.answerError, second?.requestId],
        ['Dogs!', 'Dogs', [], null, 'search failed', 'no answer', ''],
      );
      assert.ok(second!.updatedAt > first.updatedAt);
      assert.equal(second!.createdAt, s.createdAt);
      const third = await saveSearchRun(db.pool, s.id, run({ query: 'Birds' }), ADMIN_USER_ID);
      assert.equal(third?.title, 'Dogs!'); // no title given: the existing one stays
      assert.equal(await saveSearchRun(db.pool, 'nope', run(), ADMIN_USER_ID), null);
    });

    it('reuses the most recently updated search with the same normalized query', async () => {
      assert.equal(normalizeQuery('  Hello World '), 'hello world');
      const a = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'Quantum Dots' });
      await clockPast(a.updatedAt);
      const b = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: '  quantum dots' });
      await clockPast(b.updatedAt);
      const c = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'quantum dot' });
      let found = await findLatestByNormalizedQuery(db.pool, 'QUANTUM DOTS ', ADMIN_USER_ID);
      assert.equal(found?.search.id, b.id);
      assert.equal(found?.hasStoredResults, false);

      await clockPast(c.updatedAt);
      const rerun = await saveSearchRun(db.pool, a.id, run({ query: 'quantum DOTS' }), ADMIN_USER_ID);
      found = await findLatestByNormalizedQuery(db.pool, 'quantum dots', ADMIN_USER_ID);
      assert.equal(found?.search.id, a.id);
      assert.equal(found?.hasStoredResults, true);
      assert.equal(found?.search.query, 'quantum DOTS');

      // A run under another query moves the search out of this query's matches.
      await clockPast(rerun!.updatedAt);
      await saveSearchRun(db.pool, a.id, run({ query: 'something else' }), ADMIN_USER_ID);
      assert.equal((await findLatestByNormalizedQuery(db.pool, 'quantum dots', ADMIN_USER_ID))?.search.id, b.id);
      assert.equal(await findLatestByNormalizedQuery(db.pool, 'never searched', ADMIN_USER_ID), null);
      assert.equal(await findLatestByNormalizedQuery(db.pool, '   ', ADMIN_USER_ID), null);
    });

    it('counts an answer alone as stored results', async () => {
      const s = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'answer only' });
      await saveSearchRun(db.pool, s.id, run({ query: 'answer only', results: [] }), ADMIN_USER_ID);
      assert.equal((await findLatestByNormalizedQuery(db.pool, 'answer only', ADMIN_USER_ID))?.hasStoredResults, true);
    });

    it('lists by updatedAt, newest first, with a limit', async () => {
      const x = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'x' });
      await clockPast(x.updatedAt);
      const y = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'y' });
      await clockPast(y.updatedAt);
      await saveSearchRun(db.pool, x.id, run({ query: 'x' }), ADMIN_USER_ID);
      assert.deepEqual((await listSearches(db.pool, { owner: ADMIN_USER_ID, limit: 2 })).map((s) => s.id), [x.id, y.id]);
      const all = await listSearches(db.pool, { owner: ADMIN_USER_ID });
      for (let i = 1; i < all.length; i++) assert.ok(all[i - 1]!.updatedAt >= all[i]!.updatedAt);
    });

    it('deletes a search and its star', async () => {
      const s = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'gone' });
      await setStarred(db.pool, 'search', s.id, true);
      assert.equal(await deleteSearch(db.pool, s.id, ADMIN_USER_ID), true);
      assert.equal(await getSearch(db.pool, s.id, ADMIN_USER_ID), null);
      assert.equal(await getSearchDetail(db.pool, s.id, ADMIN_USER_ID), null);
      const { rowCount } = await db.pool.query('SELECT 1 FROM project_members WHERE item_id = $1', [s.id]);
      assert.equal(rowCount, 0);
      assert.equal(await deleteSearch(db.pool, s.id, ADMIN_USER_ID), false);
    });

    it('drops U+0000 inside results and answers', async () => {
      const s = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'nul' });
      const saved = await saveSearchRun(db.pool, s.id, run({ query: 'nul', answerText: 'a\0b', results: [{ ...result(1), snippet: 'c\0d' }] }), ADMIN_USER_ID);
      assert.equal(saved?.answerText, 'ab');
      assert.equal(saved?.results[0]?.snippet, 'cd');
    });
  });
}
