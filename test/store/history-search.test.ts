// History search in the store, on PGlite and (with TEST_DATABASE_URL) real Postgres: which items match,
// in which order, and what match.field/snippet say. Each case uses words no other case stores, so the
// cases share one database without seeing each other's rows.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { createChat, deleteChat } from '../../src/store/chats.ts';
import { historySearchStatement, searchHistory, snippetAround, SNIPPET_UNITS, type HistoryItem } from '../../src/store/history-search.ts';
import { appendMessages } from '../../src/store/messages.ts';
import { createSearch, deleteSearch, reuseOrCreateSearch, saveSearchRun } from '../../src/store/searches.ts';
import { testDatabases } from '../helpers/db.ts';
import { setStarred } from '../helpers/store.ts';
import { clockPast } from '../helpers/wait.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const ids = (items: HistoryItem[]) => items.map((i) => i.id);

function searchRun(query: string, answerText: string) {
  return { query, requestId: null, latencyMs: 1, error: null, answerText, answerRequestId: null, answerCitations: [], answerError: null, results: [] };
}

for (const target of await testDatabases()) {
  describe(`history search store ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    const chatWith = (title: string | null, ...contents: string[]) =>
      createChat(db.pool, { owner: ADMIN_USER_ID, title, enabledTools: [], messages: contents.map((content, i) => ({ role: i % 2 ? 'assistant' : 'user', content })) });

    it('stores text of any length: history search reads the first 65,536 characters of each', async () => {
      // About 2 MB of distinct words: over Postgres's 1 MB tsvector limit were the whole text indexed.
      const words = (tag: string) => Array.from({ length: 260_000 }, (_, i) => `${tag}${i.toString(36)}`).join(' ');
      const long = words('qlong');
      const chat = await chatWith(`quolongtitle ${words('qt')}`, `quolongfirst ${long} quolonglast`);
      await appendMessages(db.pool, chat.id, [{ role: 'assistant', content: `quolonganswer ${long}` }], ADMIN_USER_ID);
      assert.deepEqual(ids(await searchHistory(db.pool, 'quolongfirst', 50, ADMIN_USER_ID)), [chat.id], 'a word in the first part');
      assert.deepEqual(ids(await searchHistory(db.pool, 'quolonglast', 50, ADMIN_USER_ID)), [], 'a word past the first 65,536 characters');
      assert.deepEqual(ids(await searchHistory(db.pool, 'quolongtitle', 50, ADMIN_USER_ID)), [chat.id]);
      assert.deepEqual(ids(await searchHistory(db.pool, 'quolonganswer', 50, ADMIN_USER_ID)), [chat.id]);
      const search = await createSearch(db.pool, { owner: ADMIN_USER_ID, title: `quolongsearch ${long}`, query: `quolongquery ${long}` });
      await saveSearchRun(db.pool, search.id, searchRun(`quolongquery ${long}`, `quolongreply ${long}`), ADMIN_USER_ID);
      assert.deepEqual(ids(await searchHistory(db.pool, 'quolongreply', 50, ADMIN_USER_ID)), [search.id]);
      assert.deepEqual(ids(await searchHistory(db.pool, 'quolongquery', 50, ADMIN_USER_ID)), [search.id]);
    });

    it('cuts each snippet from the first 65,536 characters of its field, where every hit is', async () => {
      // A hit late in the indexed part, then about a megabyte more: highlighting the whole field cost
      // Postgres ~0.35 s per megabyte and item (on the embedded database, in the service's own thread),
      // and sent every character back to be cut to 200.
      const filler = (n: number) => Array.from({ length: n }, (_, i) => `f${i % 997}`).join(' ');
      const head = filler(12_000).slice(0, 60_000);
      const tail = filler(200_000);
      const big = (word: string) => `${head} ${word} ${tail}`;
      await chatWith(big('quobigtitle'), 'x');
      await chatWith(null, big('quobigmessage'));
      await createSearch(db.pool, { owner: ADMIN_USER_ID, title: big('quobigsearchtitle'), query: 'x' });
      await createSearch(db.pool, { owner: ADMIN_USER_ID, query: big('quobigquery') });
      const answered = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'y' });
      await saveSearchRun(db.pool, answered.id, searchRun('y', big('quobiganswer')), ADMIN_USER_ID);
      for (const word of ['quobigtitle', 'quobigmessage', 'quobigsearchtitle', 'quobigquery', 'quobiganswer']) {
        const { text, values } = historySearchStatement(word, 50, ADMIN_USER_ID);
        const { rows } = await db.pool.query<{ highlighted: string }>(text, values);
        assert.equal(rows.length, 1, word);
        assert.ok(rows[0]!.highlighted.length <= 65_536 + 2, `${word}: ${rows[0]!.highlighted.length} characters read for a snippet`);
        const [item] = await searchHistory(db.pool, word, 50, ADMIN_USER_ID);
        assert.ok(item!.match.snippet.includes(` ${word} `), `${word}: the snippet holds the hit`);
      }
    });

    it('reuses a search by a query longer than an index entry (about 2.7 KB)', async () => {
      // 1,000 different CJK characters: 3,000 bytes of UTF-8 that do not compress.
      const query = `长查询 ${Array.from({ length: 1_000 }, (_, i) => String.fromCodePoint(0x4e00 + ((i * 7919) % 20_000))).join('')}`;
      const first = await reuseOrCreateSearch(db.pool, { owner: ADMIN_USER_ID, query });
      assert.equal(first.reused, false);
      const again = await reuseOrCreateSearch(db.pool, { owner: ADMIN_USER_ID, query: `  ${query.toUpperCase()} ` });
      assert.deepEqual([again.reused, again.search.id], [true, first.search.id]);
      const other = await reuseOrCreateSearch(db.pool, { owner: ADMIN_USER_ID, query: `${query}!` });
      assert.equal(other.reused, false, 'only the same normalized query is reused');
    });

    it('needs every word, case-insensitively, the last one also as a prefix', async () => {
      const both = await chatWith(null, 'Planning the ZANZIBAR trip with a BUDGET spreadsheet');
      await chatWith(null, 'zanzibar beaches only');
      await chatWith(null, 'budget for groceries only');
      assert.deepEqual(ids(await searchHistory(db.pool, 'zanzibar budget', 50, ADMIN_USER_ID)), [both.id]);
      assert.deepEqual(ids(await searchHistory(db.pool, 'Zanzibar BUDG', 50, ADMIN_USER_ID)), [both.id], 'last word as a prefix');
      assert.deepEqual(ids(await searchHistory(db.pool, 'zanz budget', 50, ADMIN_USER_ID)), [], 'only the last word is a prefix');
      assert.deepEqual(ids(await searchHistory(db.pool, 'ÉCOLE', 50, ADMIN_USER_ID)), []);
      const accented = await chatWith('Inscription à l’école', 'hello');
      assert.deepEqual(ids(await searchHistory(db.pool, 'ÉCOLE', 50, ADMIN_USER_ID)), [accented.id], 'non-ASCII letters fold too');
    });

    it('takes a last word of several parts (hyphenated, a URL) as a prefix too, while it is typed', async () => {
      const hyphen = await chatWith(null, 'a state-of-the-art gyrfalcon aviary');
      const covid = await chatWith(null, 'gyrkestrel covid-19 notes');
      const url = await chatWith(null, 'read https://gyrdocs.example.com/guides/intro first');
      for (const q of ['state-of-the', 'gyrfalcon state-of', 'state-o', 'state-of-the-art gyrfal', 'state-of-the-art gyrfal !']) {
        assert.deepEqual(ids(await searchHistory(db.pool, q, 50, ADMIN_USER_ID)), [hyphen.id], q);
      }
      assert.deepEqual(ids(await searchHistory(db.pool, 'gyrkestrel covid-1', 50, ADMIN_USER_ID)), [covid.id]);
      assert.deepEqual(ids(await searchHistory(db.pool, 'https://gyrdocs.example.com/gui', 50, ADMIN_USER_ID)), [url.id]);
      // Only the word being typed: the earlier ones still match whole.
      assert.deepEqual(ids(await searchHistory(db.pool, 'state-of-th gyrfalcon', 50, ADMIN_USER_ID)), []);
      assert.deepEqual(ids(await searchHistory(db.pool, 'gyrfalc state-of-the', 50, ADMIN_USER_ID)), []);
    });

    it('finds words between angle brackets (code, markup), and shows the brackets in the snippet', async () => {
      const code = await chatWith(null, '#include <kiwistdio.h> then List<KiwiString> names');
      const markup = await chatWith('Render <KiwiButton> twice', 'x');
      const search = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'kiwimap<int, kiwilist>' });
      assert.deepEqual(ids(await searchHistory(db.pool, 'kiwistdio.h', 50, ADMIN_USER_ID)), [code.id]);
      const [generic] = await searchHistory(db.pool, 'kiwistring names', 50, ADMIN_USER_ID);
      assert.deepEqual([generic?.id, generic?.match], [code.id, { field: 'message', snippet: '#include <kiwistdio.h> then List<KiwiString> names' }]);
      for (const q of ['kiwibutton', '<KiwiButton>']) {
        const items = await searchHistory(db.pool, q, 50, ADMIN_USER_ID);
        assert.deepEqual(items.map((i) => [i.id, i.match]), [[markup.id, { field: 'title', snippet: 'Render <KiwiButton> twice' }]], q);
      }
      assert.deepEqual(ids(await searchHistory(db.pool, 'kiwilist', 50, ADMIN_USER_ID)), [search.id]);
    });

    it('finds each field and says which, with the field around the first hit as the snippet', async () => {
      const title = await chatWith('Quokka photography tips', 'nothing here');
      const userMsg = await chatWith(null, 'first words', 'an assistant line about the wombat burrow');
      const query = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'platypus venom facts' });
      const answered = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'australian animals' });
      await saveSearchRun(db.pool, answered.id, searchRun('australian animals', 'The echidna lays eggs.'), ADMIN_USER_ID);

      const one = async (q: string) => {
        const items = await searchHistory(db.pool, q, 50, ADMIN_USER_ID);
        assert.equal(items.length, 1, `one item for ${q}`);
        return items[0]!;
      };
      assert.deepEqual([(await one('quokka')).id, (await one('quokka')).match], [title.id, { field: 'title', snippet: 'Quokka photography tips' }]);
      assert.deepEqual((await one('wombat')).match, { field: 'message', snippet: 'an assistant line about the wombat burrow' });
      assert.equal((await one('wombat')).id, userMsg.id);
      const q = await one('platypus');
      assert.deepEqual([q.id, q.type, q.match], [query.id, 'search', { field: 'query', snippet: 'platypus venom facts' }]);
      assert.deepEqual((await one('echidna')).match, { field: 'answer', snippet: 'The echidna lays eggs.' });
      assert.equal((await one('echidna')).id, answered.id);
    });

    it('cuts a long field to 200 units around the first hit, never inside a surrogate pair', async () => {
      const before = '🦘'.repeat(150); // 300 UTF-16 units
      const content = `${before} the marsupial appears here ${'🦘'.repeat(150)} and marsupial again`;
      const chat = await chatWith(null, content);
      const [item] = await searchHistory(db.pool, 'marsupial', 50, ADMIN_USER_ID);
      assert.equal(item?.id, chat.id);
      const snippet = item!.match.snippet;
      assert.ok(snippet.length <= SNIPPET_UNITS && snippet.length >= SNIPPET_UNITS - 1, `length ${snippet.length}`);
      assert.ok(snippet.isWellFormed(), 'no half of a pair at either end');
      assert.ok(content.includes(snippet), 'a piece of the field, unmarked');
      assert.ok(snippet.includes('the marsupial appears'), 'around the first hit, not the second');
    });

    it('puts the most relevant first, ties by updatedAt descending', async () => {
      const inMessage = await chatWith(null, 'a long note that mentions narwhal once among many other words of the day');
      const inTitle = await chatWith('Narwhal', 'x');
      const tieOld = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'narwhal tusk' });
      await clockPast(tieOld.updatedAt); // distinct updatedAt: the tie is broken by it, not by id
      const tieNew = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'narwhal tusk' });
      const order = ids(await searchHistory(db.pool, 'narwhal', 50, ADMIN_USER_ID));
      assert.deepEqual(order, [inTitle.id, tieNew.id, tieOld.id, inMessage.id]);
      assert.deepEqual(ids(await searchHistory(db.pool, 'narwhal', 2, ADMIN_USER_ID)), [inTitle.id, tieNew.id], 'limit keeps the best');
    });

    it('ranks only the newest candidates of each field, by relevance among them', async () => {
      // Oldest to newest (messages by seq), most to least relevant (ts_rank here divides by the length).
      const old = await chatWith(null, 'quetzal');
      const dense = await chatWith(null, 'quetzal quetzal');
      const passing = await chatWith(null, 'a long line that mentions quetzal once among many other words of the day');
      assert.deepEqual(ids(await searchHistory(db.pool, 'quetzal', 50, ADMIN_USER_ID)), [old.id, dense.id, passing.id], 'all ranked');
      // Bounded to the newest two: the oldest is passed over, and the other two are still in relevance
      // order, the more relevant before the newer.
      assert.deepEqual(ids(await searchHistory(db.pool, 'quetzal', 50, ADMIN_USER_ID, 2)), [dense.id, passing.id]);
      assert.deepEqual(ids(await searchHistory(db.pool, 'quetzal', 1, ADMIN_USER_ID, 2)), [dense.id], 'limit within the candidates');
      // A message stored now is the newest match, so it is a candidate however small the bound.
      await appendMessages(db.pool, old.id, [{ role: 'user', content: 'quetzal again' }], ADMIN_USER_ID);
      assert.deepEqual(ids(await searchHistory(db.pool, 'quetzal', 50, ADMIN_USER_ID, 1)), [old.id]);
    });

    it('never returns deleted items, and finds a message the moment it is stored', async () => {
      const chat = await chatWith(null, 'about the axolotl');
      const search = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'axolotl habitat' });
      assert.equal((await searchHistory(db.pool, 'axolotl', 50, ADMIN_USER_ID)).length, 2);
      await deleteChat(db.pool, chat.id, ADMIN_USER_ID);
      await deleteSearch(db.pool, search.id, ADMIN_USER_ID);
      assert.deepEqual(await searchHistory(db.pool, 'axolotl', 50, ADMIN_USER_ID), []);

      const fresh = await chatWith(null, 'unrelated start');
      await appendMessages(db.pool, fresh.id, [{ role: 'user', content: 'now the capybara arrives' }], ADMIN_USER_ID);
      assert.deepEqual(ids(await searchHistory(db.pool, 'capybara', 50, ADMIN_USER_ID)), [fresh.id]);
    });

    it('ignores system and tool messages', async () => {
      await createChat(db.pool, { owner: ADMIN_USER_ID,
        enabledTools: [],
        messages: [
          { role: 'system', content: 'pangolin instructions' },
          { role: 'tool', name: 'web_search', content: 'pangolin results' },
        ],
      });
      assert.deepEqual(await searchHistory(db.pool, 'pangolin', 50, ADMIN_USER_ID), []);
    });

    it('treats tsquery operators and punctuation in q as plain text, never as syntax', async () => {
      const chat = await chatWith(null, "o'reilly & sons: the ibex | goat! (notes)");
      for (const q of ['!', '&|!():*', "'", '\\', '<->', "ibex & !goat", "o'reilly", 'ibex:*', '(ibex']) {
        const items = await searchHistory(db.pool, q, 50, ADMIN_USER_ID);
        assert.ok(Array.isArray(items), `answered for ${q}`);
      }
      assert.deepEqual(await searchHistory(db.pool, '&|!():*', 50, ADMIN_USER_ID), [], 'no words, no matches');
      assert.deepEqual(ids(await searchHistory(db.pool, 'ibex & !goat', 50, ADMIN_USER_ID)), [chat.id], '! is no negation');
      assert.deepEqual(ids(await searchHistory(db.pool, "o'reilly ibex", 50, ADMIN_USER_ID)), [chat.id]);
    });

    it('filters through the GIN indexes of every field (the expressions match sql/006)', async () => {
      const client = await db.pool.connect();
      try {
        await client.query('BEGIN');
        // Tiny tables make a sequential scan cheapest; forbidding it shows whether the indexes can serve.
        await client.query('SET LOCAL enable_seqscan = off');
        const { text, values } = historySearchStatement('some words', 50, ADMIN_USER_ID);
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${text}`, values);
        const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
        // Each field is read through an index: its GIN index, or (sql/010) the owner's own rows newest
        // first, which the planner prefers while one user's rows are few.
        const served = {
          chats: /Bitmap Index Scan on chats_title_search_idx|Index Scan using chats_owner_updated_idx on chats\b/,
          messages: /Bitmap Index Scan on messages_search_idx|Bitmap Index Scan on messages_chat_seq_idx/,
          searches: /Bitmap Index Scan on searches_(title|query|answer)_search_idx|Index Scan using searches_owner_updated_idx on searches\b/,
        };
        for (const [table, index] of Object.entries(served)) assert.match(plan, index, `${table} in:\n${plan}`);
        assert.doesNotMatch(plan, /Seq Scan on (messages|chats|searches)/, plan);
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    });

    it('maps chat and search items with their own fields, and starred', async () => {
      const chat = await createChat(db.pool, { owner: ADMIN_USER_ID, title: 'Okapi', provider: 'provider_a', model: 'm1', enabledTools: ['web_search'] });
      const [item] = await searchHistory(db.pool, 'okapi', 50, ADMIN_USER_ID);
      assert.deepEqual(item, {
        type: 'chat', id: chat.id, title: 'Okapi', createdAt: chat.createdAt, updatedAt: chat.updatedAt, starred: false, starredAt: null,
        initiatedProvider: 'provider_a', initiatedModel: 'm1', lastUsedProvider: 'provider_a', lastUsedModel: 'm1',
        additionalSystemPrompt: null, enabledTools: ['web_search'], match: { field: 'title', snippet: 'Okapi' },
      });
      await setStarred(db.pool, 'chat', chat.id, true);
      const [starred] = await searchHistory(db.pool, 'okapi', 50, ADMIN_USER_ID);
      assert.equal(starred?.starred, true);
      assert.ok(starred?.starredAt);
      const search = await createSearch(db.pool, { owner: ADMIN_USER_ID, query: 'tapir' });
      const [found] = await searchHistory(db.pool, 'tapir', 50, ADMIN_USER_ID);
      assert.deepEqual(found, {
        type: 'search', id: search.id, title: null, query: 'tapir', createdAt: search.createdAt, updatedAt: search.updatedAt,
        starred: false, starredAt: null, match: { field: 'query', snippet: 'tapir' },
      });
    });
  });
}

describe('snippetAround', () => {
  it('keeps short text whole and drops the markers', () => {
    assert.equal(snippetAround('a \uE000hit\uE001 b'), 'a hit b');
  });
  it('starts some way before a late hit', () => {
    const text = `${'x'.repeat(500)}\uE000hit\uE001${'y'.repeat(500)}`;
    const s = snippetAround(text);
    assert.equal(s.length, SNIPPET_UNITS);
    assert.equal(s.indexOf('hit'), 60);
  });
  it('ends at the end of the text for a hit near it', () => {
    const s = snippetAround(`${'x'.repeat(500)}\uE000end\uE001`);
    assert.ok(s.endsWith('end') && s.length === SNIPPET_UNITS);
  });
});
