// Search runs through the real server, actor host thread, simulator and database: event order,
// attach and join (one engine request), replace-on-rerun, stored ids and errors, disconnects, and
// the search-to-chat hand-off.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, variantTag, startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';
import { gateName, onFrame } from '../helpers/wait.ts';

/** A unique query with an optional engine directive (the simulator reads `SIM {…}` from the query). */
function query(label: string, directive?: Record<string, unknown>): string {
  const q = `${label} ${randomUUID().slice(0, 8)}`;
  return directive ? `${q} SIM ${JSON.stringify(directive)}` : q;
}

for (const db of apiDatabases()) {
  describe(`search runs ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db, actorThreads: 1 });
    });
    after(() => t.close());

    const newSearch = async (body: Record<string, unknown>) => (await t.call('POST', '/v1/searches', body)).body.search;
    const engineCalls = (what: '/search' | '/answer', q: string) =>
      t.sim.requests.filter((r) => r.upstream === 'engine_a' && r.path.endsWith(what) && r.body?.query === q);
    const names = (events: SseEvent[]) => events.map((e) => e.event);
    const activeSearches = async () => (await t.call('GET', '/v1/active-runs')).body.searches as string[];
    // Which engine call answers first is decided by a simulator gate the test opens on a frame.
    const openOn = (event: string, name: string) => onFrame(event, () => t.sim.openGate(name));

    it('streams search_results, then answer, then done with the stored search', async () => {
      const g = gateName();
      const q = query('event order', { answerDelayMs: 250, answerGate: g });
      const s = await newSearch({ query: q });
      const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: openOn('search_results', g) });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type')!, /^text\/event-stream/);
      assert.deepEqual(names(r.events), ['search_results', 'answer', 'done']);
      const [results, answer, done] = r.events.map((e) => e.data);
      assert.equal(results.results.length, 10);
      assert.ok(results.requestId);
      assert.match(answer.answerText, /^Simulated answer to: event order/);
      assert.ok(answer.answerRequestId);
      assert.equal(answer.answerCitations.length, 3);
      const stored = (await t.call('GET', `/v1/searches/${s.id}`)).body.search;
      assert.deepEqual(done.search, stored);
      assert.equal(stored.requestId, results.requestId);
      assert.equal(stored.answerRequestId, answer.answerRequestId);
      assert.ok(stored.latencyMs >= 250, `latencyMs ${stored.latencyMs} covers the slower call`);
      assert.equal(stored.error, null);
      assert.equal(stored.answerError, null);
      assert.deepEqual(stored.results, results.results);
      assert.deepEqual(stored.answerCitations, answer.answerCitations);
      // The engine gets the documented contents request and the answer call its body.
      const [call] = engineCalls('/search', q);
      assert.deepEqual(call!.body, { query: q, type: 'auto', contents: { highlights: { maxCharacters: 500 }, summary: { query: q } } });
      assert.deepEqual(engineCalls('/answer', q)[0]!.body, { query: q, text: true, stream: false });
    });

    it('emits answer first when the search is the slower call', async () => {
      const g = gateName();
      const s = await newSearch({ query: query('slow search', { searchGate: g }) });
      const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: openOn('answer', g) });
      assert.deepEqual(names(r.events), ['answer', 'search_results', 'done']);
    });

    it('honours the run body: query, title, type, numResults and domains', async () => {
      const s = await newSearch({ query: query('stored query') });
      const q = query('override');
      const r = await t.call('POST', `/v1/searches/${s.id}/run`, {
        query: q,
        title: 'Chosen title',
        type: 'fast',
        numResults: 3,
        includeDomains: ['example.org', 'docs.example.net'],
        excludeDomains: ['docs.example.net'],
      });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const search = r.body.search;
      assert.equal(search.query, q);
      assert.equal(search.title, 'Chosen title');
      assert.equal(search.results.length, 3);
      for (const item of search.results) assert.match(item.url, /^https:\/\/example\.org\//);
      const body = engineCalls('/search', q)[0]!.body;
      assert.equal(body.type, 'fast');
      assert.equal(body.numResults, 3);
      assert.deepEqual(body.includeDomains, ['example.org', 'docs.example.net']);
      assert.deepEqual(body.excludeDomains, ['docs.example.net']);
      assert.equal(engineCalls('/answer', q).length, 1);
    });

    it('documents its result and citation shapes (docs/api-notes.md)', async () => {
      const s = await newSearch({ query: query('shapes') });
      const { search } = (await t.call('POST', `/v1/searches/${s.id}/run`, {})).body;
      for (const item of search.results) {
        assert.deepEqual(Object.keys(item).sort(), ['author', 'favicon', 'image', 'publishedDate', 'score', 'snippet', 'summary', 'title', 'url']);
      }
      // Missing engine fields are null, never absent.
      assert.equal(search.results[6].title, null);
      assert.equal(search.results[4].publishedDate, null);
      assert.equal(search.results[1].author, null);
      assert.ok(search.results[0].snippet && search.results[0].summary);
      for (const c of search.answerCitations) {
        assert.deepEqual(Object.keys(c).sort(), ['author', 'publishedDate', 'text', 'title', 'url']);
        assert.ok(c.text.length <= 1001);
      }
    });

    it('a second run/stream attaches to the running one: one engine request, the same events', async () => {
      const g = gateName();
      const q = query('two streams', { searchGate: g });
      const s = await newSearch({ query: q });
      const path = `/v1/searches/${s.id}/run/stream`;
      // The whole run starts it (its search call held at the gate); the two streams join while it is
      // held, each seen joined by its replayed answer; only then may the search answer.
      const wholeRun = t.call('POST', `/v1/searches/${s.id}/run`, {});
      await waitFor(() => t.sim.heldAt(g) === 1, 10_000, 'the search call to be held');
      let joined = 0;
      const join = { stopAfter: onFrame('answer', () => joined++) };
      const streams = Promise.all([t.stream(path, {}, join), t.stream(path, { numResults: 2 }, join)]);
      await waitFor(() => joined === 2, 10_000, 'both streams to join');
      t.sim.openGate(g);
      const [[a, b], whole] = await Promise.all([streams, wholeRun]);
      assert.deepEqual(names(a.events), ['answer', 'search_results', 'done']);
      assert.deepEqual(names(b.events), ['answer', 'search_results', 'done']);
      assert.deepEqual(b.events.at(-1)!.data, a.events.at(-1)!.data);
      assert.deepEqual(whole.body.search, a.events.at(-1)!.data.search);
      assert.equal(engineCalls('/search', q).length, 1);
      assert.equal(engineCalls('/answer', q).length, 1);
    });

    it('a second run joins whatever its body: a search with no stored query, run with one in the first body', async () => {
      const g = gateName();
      const q = query('query only in the run body', { searchGate: g });
      const s = await newSearch({ title: 'only a title' });
      const path = `/v1/searches/${s.id}/run/stream`;
      const first = t.stream(path, { query: q }, { stopAfter: () => false });
      await waitFor(() => t.sim.heldAt(g) === 1, 10_000, 'the search call to be held');
      // Neither the whole run nor the stream sends a query: they join, they are not asked for one. The
      // stream is seen joined by its replayed answer; the whole run, sent first, has no such sign, so it
      // is only held to a correct answer (had it come after the run's end, the stored query reruns).
      const whole = t.call('POST', `/v1/searches/${s.id}/run`, {});
      let joined = false;
      const stream = t.stream(path, {}, { stopAfter: onFrame('answer', () => (joined = true)) });
      await waitFor(() => joined, 10_000, 'the empty-bodied stream to join');
      t.sim.openGate(g);
      const [a, b, w] = await Promise.all([first, stream, whole]);
      assert.deepEqual(names(b.events), ['answer', 'search_results', 'done'], JSON.stringify(b.events));
      assert.deepEqual(b.events.at(-1)!.data, a.events.at(-1)!.data);
      assert.equal(w.status, 200, JSON.stringify(w.body));
      assert.equal(w.body.search.query, q);
      // With no run to join, the same empty body is still refused: there is nothing to search for.
      const bare = await newSearch({ title: 'still only a title' });
      for (const p of ['/run', '/run/stream']) {
        const r = await t.call('POST', `/v1/searches/${bare.id}${p}`, {});
        assert.equal(r.status, 400, p);
        assert.match(r.body.message, /no query: send `query` in the run body/);
      }
    });

    it('attach during a slow run replays what happened, then follows live to done', async () => {
      const g = gateName();
      const q = query('attach', { searchGate: g });
      const s = await newSearch({ query: q });
      const seen: SseEvent[] = [];
      const first = t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: (ev) => (seen.push(ev), false) });
      await waitFor(() => seen.some((e) => e.event === 'answer'), 5000, 'the answer event');
      assert.deepEqual(await activeSearches(), [s.id]);
      const attached = await t.stream(`/v1/searches/${s.id}/run/stream/attach`, undefined, { stopAfter: openOn('answer', g) });
      assert.equal(attached.status, 200);
      assert.deepEqual(names(attached.events), ['answer', 'search_results', 'done']);
      assert.deepEqual(attached.events[0]!.data, seen[0]!.data);
      const firstResult = await first;
      assert.deepEqual(names(firstResult.events), ['answer', 'search_results', 'done']);
      assert.deepEqual(attached.events.at(-1)!.data, firstResult.events.at(-1)!.data);
      assert.equal(engineCalls('/search', q).length, 1);
      assert.deepEqual(await activeSearches(), []);
    });

    it('attach with no active run is 404 active search stream not found', async () => {
      const s = await newSearch({ query: query('idle') });
      const r = await t.call('POST', `/v1/searches/${s.id}/run/stream/attach`);
      assert.equal(r.status, 404);
      assert.equal(r.body.message, 'active search stream not found');
    });

    it('unknown searches are 404 and a search without a query is 400', async () => {
      for (const path of ['/run', '/run/stream', '/chat']) {
        const r = await t.call('POST', `/v1/searches/nope${path}`, {});
        assert.equal(r.status, 404, path);
        assert.equal(r.body.message, 'search not found');
      }
      const s = await newSearch({ title: 'only a title' });
      for (const path of ['/run', '/run/stream']) {
        const r = await t.call('POST', `/v1/searches/${s.id}${path}`, {});
        assert.equal(r.status, 400, path);
        assert.match(r.body.message, /no query: send `query` in the run body/);
      }
      const bad = await t.call('POST', `/v1/searches/${s.id}/run`, { query: 'x', type: 'sideways' });
      assert.equal(bad.status, 400);
      assert.match(bad.body.message, /type/);
    });

    it('a rerun replaces the stored results and answer', async () => {
      const q = query('rerun');
      const s = await newSearch({ query: q });
      const one = (await t.call('POST', `/v1/searches/${s.id}/run`, {})).body.search;
      const two = (await t.call('POST', `/v1/searches/${s.id}/run`, { numResults: 2 })).body.search;
      assert.equal(one.results.length, 10);
      assert.equal(two.results.length, 2);
      assert.notEqual(two.requestId, one.requestId);
      assert.notEqual(two.answerRequestId, one.answerRequestId);
      assert.ok(Date.parse(two.updatedAt) >= Date.parse(one.updatedAt));
      // A rerun whose search fails leaves no results from before.
      const three = (await t.call('POST', `/v1/searches/${s.id}/run`, { query: `${q} SIM {"searchStatus":500}` })).body.search;
      assert.deepEqual(three.results, []);
      assert.equal(three.requestId, '');
      assert.match(three.error, /HTTP 500/);
      assert.ok(three.answerText);
      assert.deepEqual((await t.call('GET', `/v1/searches/${s.id}`)).body.search, three);
    });

    it('search fails, answer works: search_error and answer, stored error, whole run is 200', async () => {
      const g = gateName();
      const s = await newSearch({ query: query('half', { searchStatus: 500, answerGate: g }) });
      const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: openOn('search_error', g) });
      assert.deepEqual(names(r.events), ['search_error', 'answer', 'done']);
      assert.match(r.events[0]!.data.error, /engine_a \/search failed with HTTP 500: Simulated search failure/);
      const stored = r.events.at(-1)!.data.search;
      assert.equal(stored.error, r.events[0]!.data.error);
      assert.equal(stored.answerError, null);
      assert.ok(stored.answerText);
      const whole = await t.call('POST', `/v1/searches/${s.id}/run`, {});
      assert.equal(whole.status, 200);
    });

    it('answer fails, search works: answer_error and search_results', async () => {
      const g = gateName();
      const s = await newSearch({ query: query('other half', { answerStatus: 429, answerGate: g }) });
      const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: openOn('search_results', g) });
      assert.deepEqual(names(r.events), ['search_results', 'answer_error', 'done']);
      const stored = r.events.at(-1)!.data.search;
      assert.match(stored.answerError, /HTTP 429/);
      assert.equal(stored.answerText, null);
      assert.equal(stored.answerRequestId, null);
      assert.equal(stored.results.length, 10);
    });

    it('both failing: an error status, a terminal error event, and both errors stored', async () => {
      const failing = { searchStatus: 500, answerStatus: 503 };
      const s = await newSearch({ query: query('both', failing) });
      const whole = await t.call('POST', `/v1/searches/${s.id}/run`, {});
      assert.equal(whole.status, 502);
      assert.match(whole.body.message, /^search and answer both failed: .*HTTP 500.*; .*HTTP 503/);
      const stored = (await t.call('GET', `/v1/searches/${s.id}`)).body.search;
      assert.match(stored.error, /HTTP 500/);
      assert.match(stored.answerError, /HTTP 503/);
      assert.deepEqual(stored.results, []);
      assert.equal(stored.answerText, null);

      const g = gateName();
      const r = await t.stream(`/v1/searches/${s.id}/run/stream`, { query: query('both', { ...failing, answerGate: g }) }, { stopAfter: openOn('search_error', g) });
      assert.deepEqual(names(r.events), ['search_error', 'answer_error', 'error']);
      assert.equal(r.events[2]!.data.message, whole.body.message);
    });

    it('a client disconnect leaves the run going; its final state is stored', async () => {
      const g = gateName();
      const q = query('disconnect', { searchGate: g });
      const s = await newSearch({ query: q });
      const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {}, { stopAfter: (ev) => ev.event === 'answer' });
      assert.deepEqual(names(r.events), ['answer']);
      assert.deepEqual(await activeSearches(), [s.id]);
      t.sim.openGate(g);
      await waitFor(async () => (await activeSearches()).length === 0, 5000, 'the run to finish');
      const stored = (await t.call('GET', `/v1/searches/${s.id}`)).body.search;
      assert.equal(stored.results.length, 10);
      assert.ok(stored.answerText);
      assert.equal(engineCalls('/search', q).length, 1);
    });

    it('a chat from a search is seeded with one system message and titled Search: <query>', async () => {
      const q = query('seed');
      const s = await newSearch({ query: q });
      const { search } = (await t.call('POST', `/v1/searches/${s.id}/run`, {})).body;
      const r = await t.call('POST', `/v1/searches/${s.id}/chat`, {});
      assert.equal(r.status, 200);
      assert.equal(r.body.chat.title, `Search: ${q}`);
      assert.deepEqual(r.body.chat.enabledTools.sort(), ['fetch_url', 'web_search']);
      const chat = (await t.call('GET', `/v1/chats/${r.body.chat.id}`)).body.chat;
      assert.equal(chat.messages.length, 1);
      const [m] = chat.messages;
      assert.equal(m.role, 'system');
      assert.deepEqual(m.metadata, { kind: 'search_context', searchId: s.id });
      assert.ok(m.content.includes(`Query: ${q}`));
      assert.ok(m.content.includes(search.answerText));
      for (const c of search.answerCitations) assert.ok(m.content.includes(c.url), c.url);
      for (const item of search.results.slice(0, 5)) assert.ok(m.content.includes(item.url), item.url);
      assert.ok(!m.content.includes(search.results[5].url), 'only the top results');
    });

    it('an explicit title wins; a search with only a title gives Search: <title>', async () => {
      const s = await newSearch({ query: query('titled') });
      await t.call('POST', `/v1/searches/${s.id}/run`, {});
      const r = await t.call('POST', `/v1/searches/${s.id}/chat`, { title: '  My research  ' });
      assert.equal(r.body.chat.title, 'My research');
      const untitled = await newSearch({ title: 'Notes on tides' });
      const r2 = await t.call('POST', `/v1/searches/${untitled.id}/chat`, {});
      assert.equal(r2.status, 200);
      assert.equal(r2.body.chat.title, 'Search: Notes on tides');
      const msg = (await t.call('GET', `/v1/chats/${r2.body.chat.id}`)).body.chat.messages[0];
      assert.match(msg.content, /Answer:\n\(no answer\)/);
      assert.match(msg.content, /Top results:\n\(no results\)/);
      const blank = await t.call('POST', `/v1/searches/${s.id}/chat`, { title: '  ' });
      assert.equal(blank.status, 400);
    });
  });
}
