// An engine_a that misbehaves in ways the simulator does not: the search run reports each half's failure
// in the engine's words, what it streams is what it stores, and nothing the engine sends can hold the run
// or the memory of its thread. engine_a is a small fake server whose answer the query picks.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type SseEvent, type TestServer } from '../helpers/server.ts';

type Answer = (res: ServerResponse, what: 'search' | 'answer') => void;

const json = (res: ServerResponse, body: unknown, status = 200) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

const result = (i: number, extra: Record<string, unknown> = {}) => ({ id: `https://example.org/${i}`, url: `https://example.org/${i}`, title: `Result ${i}`, ...extra });

// A citation whose text has an emoji across the 1,000-unit excerpt boundary (units 999 and 1000).
const LONG_CITATION = `${'a'.repeat(999)}😀${'b'.repeat(100)}`;

const ANSWERS: Record<string, Answer> = {
  // A gateway or an engine version that reports failures with status 200.
  'error body': (res, what) => json(res, { error: `${what} quota exceeded` }),
  // Text with what Postgres cannot store: NUL, a lone surrogate.
  'bad text': (res, what) =>
    what === 'search'
      ? json(res, { requestId: 'r1', results: [result(1, { title: 'Nul\u0000title', highlights: ['lone \ud800 half'] })] })
      : json(res, { answer: 'An\u0000swer \udc00', requestId: 'a1', citations: [{ url: 'https://example.org/1', title: 'T\u0000', text: LONG_CITATION }] }),
  // Addresses a client would turn into a link that runs script in its own page.
  'script links': (res, what) => {
    const links = ['javascript:alert(document.cookie)', ' JavaScript:alert(1)', 'data:text/html,<script>alert(1)</script>', 'https://example.org/ok'];
    if (what === 'search') return json(res, { requestId: 'r1', results: links.map((url, i) => ({ id: url, url, title: `Result ${i}` })) });
    json(res, { answer: 'See the sources.', requestId: 'a1', citations: links.map((url) => ({ id: url, url, title: 'Cited' })) });
  },
  // A body far beyond any real answer (a wrong base URL pointing at a download, a broken proxy): 128 MB,
  // sent as fast as the socket takes it. It must not be read whole into the run's thread.
  'huge body': (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let left = 128;
    const pump = () => {
      while (left > 0) {
        left--;
        if (!res.write(chunk)) return;
      }
      res.end();
    };
    res.on('drain', pump);
    pump();
  },
};

async function fakeEngine(): Promise<{ url: string; server: Server }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let raw = '';
    req.on('data', (d) => (raw += d));
    req.on('end', () => {
      const query: string = raw ? JSON.parse(raw).query : '';
      const answer = ANSWERS[query.replace(/ [0-9a-f]{8}$/, '')];
      const what = req.url?.endsWith('/answer') ? 'answer' : 'search';
      if (answer) return answer(res, what);
      json(res, { error: `no answer for ${query}` }, 404);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('search runs against a misbehaving engine_a', () => {
  let t: TestServer;
  let engine: Server;
  before(async () => {
    const fake = await fakeEngine();
    engine = fake.server;
    t = await startTestServer({ actorThreads: 1, env: { ENGINE_A_BASE_URL: fake.url } });
  });
  after(async () => {
    await t.close();
    engine.closeAllConnections();
    await new Promise((r) => engine.close(r));
  });

  const newSearch = async (label: string) => (await t.call('POST', '/v1/searches', { query: `${label} ${Math.random().toString(16).slice(2, 10).padEnd(8, '0')}` })).body.search;
  const names = (events: SseEvent[]) => events.map((e) => e.event);
  const stored = async (id: string) => (await t.call('GET', `/v1/searches/${id}`)).body.search;

  it('a 200 with an error body is a failure in the engine’s words, not an empty success', async () => {
    const s = await newSearch('error body');
    const whole = await t.call('POST', `/v1/searches/${s.id}/run`, {});
    assert.equal(whole.status, 502, JSON.stringify(whole.body));
    assert.match(whole.body.message, /^search and answer both failed: .*search quota exceeded.*; .*answer quota exceeded/);
    const search = await stored(s.id);
    assert.match(search.error, /search quota exceeded/);
    assert.match(search.answerError, /answer quota exceeded/);

    const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {});
    assert.deepEqual(names(r.events).sort(), ['answer_error', 'error', 'search_error']);
  });

  it('text Postgres cannot hold is streamed as it is stored', async () => {
    const s = await newSearch('bad text');
    const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {});
    assert.equal(r.events.at(-1)!.event, 'done', JSON.stringify(r.events.at(-1)));
    const search = await stored(s.id);
    assert.deepEqual(r.events.at(-1)!.data.search, search);
    const found = r.events.find((e) => e.event === 'search_results')!.data;
    const answer = r.events.find((e) => e.event === 'answer')!.data;
    assert.deepEqual(found.results, search.results);
    assert.deepEqual(answer.answerCitations, search.answerCitations);
    assert.equal(answer.answerText, search.answerText);
    for (const text of [search.results[0].title, search.results[0].snippet, search.answerText, search.answerCitations[0].text]) {
      assert.ok(!text.includes('\u0000') && text.isWellFormed(), JSON.stringify(text));
    }
    // The excerpt is cut before the emoji rather than through it.
    assert.equal(search.answerCitations[0].text, `${'a'.repeat(999)}…`);
  });

  it('results and citations whose address is not http(s) are dropped, as results without one are', async () => {
    const s = await newSearch('script links');
    const r = await t.stream(`/v1/searches/${s.id}/run/stream`, {});
    assert.equal(r.events.at(-1)!.event, 'done');
    const search = await stored(s.id);
    assert.deepEqual(search.results.map((x: { url: string }) => x.url), ['https://example.org/ok']);
    assert.deepEqual(search.answerCitations.map((x: { url: string }) => x.url), ['https://example.org/ok']);
    assert.deepEqual(r.events.find((e) => e.event === 'search_results')!.data.results, search.results);
  });

  it('a huge body fails that half once it is past the cap, without being read whole', async () => {
    const s = await newSearch('huge body');
    const started = Date.now();
    const whole = await t.call('POST', `/v1/searches/${s.id}/run`, {});
    assert.equal(whole.status, 502, JSON.stringify(whole.body));
    assert.match(whole.body.message, /larger than/);
    assert.ok(Date.now() - started < 30_000, 'well before the 60 s deadline');
  });
});
