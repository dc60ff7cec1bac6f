// engine_a, engine_b and the pages over plain HTTP, plus the request log and the control endpoint.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { waitFor } from '../helpers/wait.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('sim/engines', () => {
  let sim: SimHandle;
  before(async () => {
    sim = await startSimulator();
  });
  after(() => sim.close());

  const post = (url: string, body: unknown, key: string | null = 'ek'): Promise<Response> =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
      body: JSON.stringify(body),
    });

  describe('engine_a', () => {
    test('search: deterministic, numResults, domain filters, contents on request', async () => {
      const body = { query: 'tide pools', type: 'auto', numResults: 5, contents: { text: { maxCharacters: 50 }, highlights: true, summary: { query: 'main' } } };
      const r1 = (await (await post(`${sim.urls.engine_a}/search`, body)).json()) as any;
      const r2 = (await (await post(`${sim.urls.engine_a}/search`, body)).json()) as any;
      assert.equal(r1.results.length, 5);
      assert.deepEqual(r1.results, r2.results);
      assert.equal(typeof r1.requestId, 'string');
      assert.equal(typeof r1.costDollars.total, 'number');
      assert.ok(r1.results[0].text.length <= 50);
      assert.ok(Array.isArray(r1.results[0].highlights));
      assert.ok(r1.results[0].summary);
      const plain = (await (await post(`${sim.urls.engine_a}/search`, { query: 'tide pools' })).json()) as any;
      assert.equal(plain.results.length, 10);
      assert.equal(plain.results[0].text, undefined);
      const only = (await (await post(`${sim.urls.engine_a}/search`, { query: 'q', includeDomains: ['example.org', 'sub.test.net'], numResults: 6 })).json()) as any;
      assert.ok(only.results.every((x: any) => /^https:\/\/(example\.org|sub\.test\.net)\//.test(x.url)));
      const none = (await (await post(`${sim.urls.engine_a}/search`, { query: 'q', excludeDomains: ['example.com', 'example.org'] })).json()) as any;
      assert.ok(none.results.every((x: any) => !/example\.(com|org)\//.test(x.url)));
    });

    test('answer, auth and scripted failures', async () => {
      const a = (await (await post(`${sim.urls.engine_a}/answer`, { query: 'what is a tide pool', text: true })).json()) as any;
      assert.match(a.answer, /tide pool/);
      assert.ok(a.citations.length > 0 && a.citations[0].text);
      const unauth = await post(`${sim.urls.engine_a}/search`, { query: 'x' }, null);
      assert.equal(unauth.status, 401);
      assert.equal(typeof ((await unauth.json()) as any).error, 'string');
      const failed = await post(`${sim.urls.engine_a}/search`, { query: 'x SIM {"searchStatus":503}' });
      assert.equal(failed.status, 503);
      assert.equal(typeof ((await failed.json()) as any).error, 'string');
      const t0 = performance.now();
      const slow = await post(`${sim.urls.engine_a}/answer`, { query: 'x SIM {"answerDelayMs":150}' });
      assert.equal(slow.status, 200);
      assert.ok(performance.now() - t0 >= 140);
      assert.equal((await post(`${sim.urls.engine_a}/search`, {})).status, 400);
    });

    test('a gated answer is held until the test opens its gate; an open gate stays open', async () => {
      let answered = false;
      const held = post(`${sim.urls.engine_a}/answer`, { query: 'x SIM {"answerGate":"g1"}' }).then((r) => ((answered = true), r));
      await waitFor(() => sim.heldAt('g1') === 1, 10_000, 'the answer call to reach its gate');
      assert.equal(answered, false);
      sim.openGate('g1');
      assert.equal((await held).status, 200);
      assert.equal(sim.heldAt('g1'), 0);
      assert.equal((await post(`${sim.urls.engine_a}/answer`, { query: 'y SIM {"answerGate":"g1"}' })).status, 200);
    });
  });

  describe('engine_b', () => {
    test('json results, missing q, HTML without format=json, 403 when JSON is disabled', async () => {
      const r = await fetch(`${sim.urls.engine_b}/search?q=${encodeURIComponent('rust async')}&format=json`);
      assert.equal(r.status, 200);
      const j = (await r.json()) as any;
      assert.equal(j.query, 'rust async');
      assert.equal(j.results.length, 10);
      for (const k of ['url', 'title', 'content', 'engine', 'engines', 'positions', 'score', 'category', 'publishedDate']) assert.ok(k in j.results[0], k);
      for (const k of ['answers', 'corrections', 'infoboxes', 'suggestions', 'unresponsive_engines']) assert.ok(Array.isArray(j[k]), k);
      const missing = await fetch(`${sim.urls.engine_b}/search?format=json`);
      assert.equal(missing.status, 400);
      assert.deepEqual(await missing.json(), { error: 'No query' });
      const html = await fetch(`${sim.urls.engine_b}/search?q=x`);
      assert.match(html.headers.get('content-type')!, /text\/html/);
      const off = await fetch(`${sim.urls.engine_b_nojson}/search?q=x&format=json`);
      assert.equal(off.status, 403);
      assert.match(await off.text(), /<html/);
      const limited = await fetch(`${sim.urls.engine_b}/search?q=${encodeURIComponent('x SIM {"searchStatus":429}')}&format=json`);
      assert.equal(limited.status, 429);
      assert.equal(await limited.text(), 'Too Many Requests');
    });
  });

  describe('pages', () => {
    test('article, text, json, png, redirect, big', async () => {
      const art = await fetch(`${sim.urls.pages}/article`);
      const html = await art.text();
      assert.match(art.headers.get('content-type')!, /text\/html/);
      for (const s of ['<script>', '<style>', '<nav', '<article>', 'PERIWINKLE-42', 'href="https://example.org/']) assert.ok(html.includes(s), s);
      const txt = await fetch(`${sim.urls.pages}/plain.txt`);
      assert.match(txt.headers.get('content-type')!, /text\/plain/);
      const json = await fetch(`${sim.urls.pages}/data.json`);
      assert.match(json.headers.get('content-type')!, /application\/json/);
      const png = Buffer.from(await (await fetch(`${sim.urls.pages}/image.png`)).arrayBuffer());
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      const redirect = await fetch(`${sim.urls.pages}/redirect?to=${encodeURIComponent('/pages/plain.txt')}`, { redirect: 'manual' });
      assert.equal(redirect.status, 302);
      assert.equal(redirect.headers.get('location'), '/pages/plain.txt');
      const followed = await fetch(`${sim.urls.pages}/redirect?to=${encodeURIComponent(`${sim.urls.pages}/plain.txt`)}`);
      assert.match(await followed.text(), /PLAINTEXT-7/);
      const big = await fetch(`${sim.urls.pages}/big`);
      const size = Number(big.headers.get('content-length'));
      assert.ok(size > 3_000_000 && size < 3_300_000, String(size));
      await big.arrayBuffer();
    });

    test('slow page does not answer quickly, and an abort frees it', async () => {
      await assert.rejects(fetch(`${sim.urls.pages}/slow`, { signal: AbortSignal.timeout(200) }), (e: unknown) => (e as Error).name === 'TimeoutError');
    });
  });

  test('request log records upstream, body and retry count; unknown paths are logged too', async () => {
    sim.clearRequests();
    await post(`${sim.urls.engine_a}/search`, { query: 'logged' });
    await fetch(`http://127.0.0.1:${sim.port}/nowhere`);
    assert.equal(sim.requests.length, 2);
    assert.equal(sim.requests[0]!.upstream, 'engine_a');
    assert.equal(sim.requests[0]!.path, '/engine-a/search');
    assert.deepEqual(sim.requests[0]!.body, { query: 'logged' });
    assert.equal(sim.requests[0]!.headers['x-api-key'], 'ek');
    assert.equal(sim.requests[1]!.upstream, 'unknown');
  });
});
