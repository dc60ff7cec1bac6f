// engine_a and engine_b clients against the offline simulator (src/sim/server.ts).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { engineAAnswer, engineASearch } from '../../src/engines/engine-a.ts';
import { engineBSearch, mapEngineBResult } from '../../src/engines/engine-b.ts';
import { EngineError } from '../../src/engines/errors.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('tools/engines', () => {
  let sim: SimHandle;
  before(async () => {
    sim = await startSimulator();
  });
  after(async () => {
    await sim.close();
  });

  /** A local port nothing listens on (fetch refuses "bad ports" such as 1 before connecting). */
  async function closedPort(): Promise<number> {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const { port } = srv.address() as AddressInfo;
    await new Promise<void>((r) => srv.close(() => r()));
    return port;
  }

  const a = () => ({ baseUrl: sim.urls.engine_a, apiKey: 'test-key' });

  function isEngineError(status: number | undefined, message: RegExp) {
    return (err: unknown) => {
      assert.ok(err instanceof EngineError, `expected EngineError, got ${String(err)}`);
      assert.equal(err.status, status);
      assert.match(err.message, message);
      return true;
    };
  }

  describe('engine_a /search', () => {
    test('sends the wire-format body and maps results into SearchResultItem', async () => {
      sim.clearRequests();
      const res = await engineASearch({
        ...a(),
        query: 'tide pools',
        type: 'fast',
        numResults: 8,
        includeDomains: ['example.org', 'docs.example.net'],
        excludeDomains: ['example.com'],
        contents: { text: { maxCharacters: 1000 }, highlights: { maxCharacters: 500 }, summary: { query: 'main point' } },
      });
      const req = sim.requests.find((r) => r.path === '/engine-a/search')!;
      assert.equal(req.method, 'POST');
      assert.equal(req.headers['x-api-key'], 'test-key');
      assert.deepEqual(req.body, {
        query: 'tide pools',
        type: 'fast',
        numResults: 8,
        includeDomains: ['example.org', 'docs.example.net'],
        excludeDomains: ['example.com'],
        contents: { text: { maxCharacters: 1000 }, highlights: { maxCharacters: 500 }, summary: { query: 'main point' } },
      });
      assert.equal(typeof res.requestId, 'string');
      assert.ok(res.latencyMs >= 0);
      assert.equal(res.results.length, 8);
      assert.ok(res.results.every((r) => /^https:\/\/(example\.org|docs\.example\.net)\//.test(r.url)));
      const first = res.results[0]!;
      assert.match(first.title!, /Tide Pools/);
      assert.ok(first.snippet && !first.snippet.startsWith('Tide Pools.'), 'snippet comes from highlights, not text');
      assert.match(first.summary!, /^Summary: /);
      assert.equal(typeof first.score, 'number');
      assert.match(first.favicon!, /favicon\.ico$/);
      // The engine leaves out title, date or author on some results: they map to null, not undefined.
      assert.equal(res.results[6]!.title, null);
      assert.equal(res.results[4]!.publishedDate, null);
      assert.equal(res.results[1]!.author, null);
      assert.ok(Array.isArray((res.raw as { results: unknown[] }).results));
    });

    test('snippet falls back to text when there are no highlights; defaults are minimal', async () => {
      sim.clearRequests();
      const res = await engineASearch({ ...a(), query: 'rust async', contents: { text: { maxCharacters: 80 } } });
      assert.deepEqual(sim.requests[0]!.body, { query: 'rust async', type: 'auto', contents: { text: { maxCharacters: 80 } } });
      assert.ok(res.results[0]!.snippet!.startsWith('Rust Async.'));
      assert.equal(res.results[0]!.summary, null);
    });

    test('engine errors become EngineError with the status and the engine message', async () => {
      await assert.rejects(
        engineASearch({ ...a(), query: 'x SIM {"searchStatus":500}' }),
        (err: unknown) =>
          isEngineError(500, /engine_a \/search failed with HTTP 500: Simulated search failure \(500\)/)(err) &&
          (err as EngineError).engineMessage === 'Simulated search failure (500)',
      );
      await assert.rejects(
        engineASearch({ ...a(), query: 'x', numResults: 500 }),
        isEngineError(400, /numResults must be an integer/),
      );
      await assert.rejects(engineASearch({ ...a(), apiKey: '', query: 'x' }), /ENGINE_A_API_KEY/);
    });

    test('timeouts and aborts are EngineErrors without a status', async () => {
      // Held at a gate nobody opens: only the timeout or the abort can end these calls.
      await assert.rejects(
        engineASearch({ ...a(), query: 'slow SIM {"searchGate":"never"}' }, { timeoutMs: 200 }),
        isEngineError(undefined, /engine_a \/search timed out after 200 ms/),
      );
      await assert.rejects(
        engineASearch({ ...a(), query: 'slow SIM {"searchGate":"never"}' }, { signal: AbortSignal.timeout(100) }),
        isEngineError(undefined, /aborted/),
      );
      const closed = await closedPort();
      await assert.rejects(
        engineASearch({ baseUrl: `http://127.0.0.1:${closed}/engine-a`, apiKey: 'k', query: 'x' }),
        isEngineError(undefined, new RegExp(`could not be reached at http://127\\.0\\.0\\.1:${closed}: .*ECONNREFUSED`)),
      );
    });
  });

  describe('engine_a /answer', () => {
    test('returns the answer text, request id and mapped citations', async () => {
      sim.clearRequests();
      const res = await engineAAnswer({ ...a(), query: 'how big are tide pools' });
      assert.deepEqual(sim.requests[0]!.body, { query: 'how big are tide pools', text: true, stream: false });
      assert.equal(res.answerText, 'Simulated answer to: how big are tide pools');
      assert.equal(typeof res.answerRequestId, 'string');
      assert.equal(res.citations.length, 3);
      const c = res.citations[0]!;
      assert.match(c.url, /^https:\/\//);
      assert.equal(typeof c.title, 'string');
      assert.equal(typeof c.author, 'string');
      assert.equal(typeof c.publishedDate, 'string');
      assert.match(c.text!, /discusses how big are tide pools/);
    });

    test('answer failures are EngineErrors', async () => {
      await assert.rejects(
        engineAAnswer({ ...a(), query: 'x SIM {"answerStatus":503}' }),
        isEngineError(503, /engine_a \/answer failed with HTTP 503: Simulated answer failure/),
      );
    });
  });

  describe('engine_b', () => {
    test('GET /search?q=…&format=json, results mapped and cut to numResults', async () => {
      sim.clearRequests();
      const res = await engineBSearch({ baseUrl: sim.urls.engine_b, query: 'rust async', numResults: 4 });
      const req = sim.requests[0]!;
      assert.equal(req.method, 'GET');
      assert.equal(req.path, '/engine-b/search');
      const q = new URLSearchParams(req.query);
      assert.equal(q.get('q'), 'rust async');
      assert.equal(q.get('format'), 'json');
      assert.equal(res.results.length, 4);
      const r = res.results[0]!;
      assert.match(r.url, /^https:\/\//);
      assert.match(r.snippet!, /discusses rust async/);
      assert.equal(r.summary, null);
      assert.equal(typeof r.score, 'number');
      assert.equal(res.results[0]!.publishedDate, null);
      assert.equal(typeof res.results[1]!.publishedDate, 'string');
      assert.deepEqual(res.suggestions, ['rust async tutorial', 'rust async examples']);
    });

    test('403 with an HTML body: says to allow JSON output and names CHAT_ENGINE_B_BASE_URL', async () => {
      await assert.rejects(
        engineBSearch({ baseUrl: sim.urls.engine_b_nojson, query: 'x' }),
        isEngineError(403, /CHAT_ENGINE_B_BASE_URL=.*engine-b-nojson: the instance must allow the JSON output format .*format=json/),
      );
    });

    test('a 200 without a results list is an error in the engine’s words, not “no results”', async () => {
      const srv = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'too many requests from this IP' }));
      });
      await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
      try {
        const { port } = srv.address() as AddressInfo;
        await assert.rejects(
          engineBSearch({ baseUrl: `http://127.0.0.1:${port}`, query: 'x' }),
          isEngineError(200, /^engine_b \/search answered HTTP 200 without a results list: too many requests from this IP$/),
        );
      } finally {
        srv.closeAllConnections();
        await new Promise<void>((r) => srv.close(() => r()));
      }
    });

    test('a result whose url is not http(s) is dropped (a javascript: link would run in a client)', () => {
      assert.equal(mapEngineBResult({ url: 'javascript:alert(1)', title: 'x' }), null);
      assert.equal(mapEngineBResult({ url: 'data:text/html,<b>x</b>', title: 'x' }), null);
      assert.equal(mapEngineBResult({ url: 'https://example.org/a', title: 'x' })!.url, 'https://example.org/a');
    });

    test('plain-text 429 and JSON 500 give clear errors', async () => {
      await assert.rejects(
        engineBSearch({ baseUrl: sim.urls.engine_b, query: 'x SIM {"searchStatus":429}' }),
        isEngineError(429, /engine_b rate-limited the request \(HTTP 429\): Too Many Requests/),
      );
      await assert.rejects(
        engineBSearch({ baseUrl: sim.urls.engine_b, query: 'x SIM {"searchStatus":500}' }),
        isEngineError(500, /engine_b \/search failed with HTTP 500: search error/),
      );
    });
  });
});
