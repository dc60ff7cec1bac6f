// fetch_url against the simulator's pages (and a tiny local server for encodings), including the
// private-address refusals.
//
// Redirect re-checking needs a first hop that is allowed and a second that is refused, while every
// server here is on 127.0.0.1. The tool factory takes two test-only hooks for that: `resolve` maps the
// made-up name `public.example` to 127.0.0.1, and `checkAddress` allows an address only when the URL's
// host is `public.example`, deferring to the real policy otherwise. A redirect from public.example to
// 127.0.0.1 or localhost must then be refused at the second hop. Because `public.example` exists in no
// DNS, a successful fetch of it also proves the connection used the checked (pinned) address.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import zlib from 'node:zlib';
import { loadConfig } from '../../src/base/config.ts';
import { createFetchUrlTool, fetchUrlTool } from '../../src/tools/fetch-url.ts';
import { classifyAddress, defaultAddressCheck, systemResolver } from '../../src/tools/net-guard.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { ToolError, type ToolContext } from '../../src/tools/types.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { waitFor } from '../helpers/wait.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('tools/fetch-url', () => {
  let sim: SimHandle;
  // The pool fetch_url converts HTML in, as an actor host thread has its own.
  const cpu = new CpuPool();
  let fixture: Server;
  let fixtureUrl: string;
  let hangClosed: Promise<void> | undefined;

  before(async () => {
    sim = await startSimulator();
    fixture = createServer((req, res) => {
      const text = 'Café crème — encoded body ENC-OK';
      if (req.url === '/gzip') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-encoding': 'gzip' });
        return res.end(zlib.gzipSync(text));
      }
      if (req.url === '/br') {
        res.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'br' });
        return res.end(zlib.brotliCompressSync(`<html><body><p>${text}</p></body></html>`));
      }
      // A byte order mark decides the encoding over any label, as in a browser (WHATWG "decode").
      if (req.url === '/bom-utf8') {
        res.writeHead(200, { 'content-type': 'text/html; charset=iso-8859-1' });
        return res.end(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(`<html><body><p>${text}</p></body></html>`)]));
      }
      if (req.url === '/bom-utf16') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(text, 'utf16le')]));
      }
      if (req.url === '/bom-untyped') {
        return res.end(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`<html><body><p>${text}</p></body></html>`, 'utf16le')]));
      }
      if (req.url === '/latin1') {
        res.writeHead(200, { 'content-type': 'text/plain; charset=windows-1252' });
        return res.end(Buffer.from([0x43, 0x61, 0x66, 0xe9])); // "Café"
      }
      // Never answers: a stop (the run's signal) must cut the fetch, not the tool's timeout.
      if (req.url === '/hang') {
        hangClosed = new Promise((r) => req.socket.once('close', () => r()));
        return;
      }
      // 150 bytes whose table layout html-to-text fills slot by slot: colspan × rowspan makes 192 million
      // slots, gigabytes of heap for one page.
      if (req.url === '/span-bomb') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end(`<table>${'<tr><td colspan="8000" rowspan="8000">x</td></tr>'.repeat(3)}</table>`);
      }
      if (req.url === '/untyped') return res.end('<!DOCTYPE html><html><body><p>sniffed html</p><script>x()</script></body></html>');
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(Buffer.from([0, 1, 2, 3, 0, 255]));
    });
    await new Promise<void>((r) => fixture.listen(0, '127.0.0.1', r));
    fixtureUrl = `http://127.0.0.1:${(fixture.address() as AddressInfo).port}`;
  });
  after(async () => {
    await sim.close();
    await new Promise<void>((r) => fixture.close(() => r()));
    await cpu.close();
  });

  function ctx(allowPrivate: boolean, signal = new AbortController().signal): ToolContext {
    return { config: loadConfig({ FETCH_URL_ALLOW_PRIVATE: allowPrivate ? 'true' : 'false' }), signal, cpu };
  }
  const open = () => ctx(true);
  const page = (p: string) => `${sim.urls.pages}${p}`;

  function toolError(re: RegExp) {
    return (e: unknown) => {
      assert.ok(e instanceof ToolError, `expected ToolError, got ${String(e)}`);
      assert.match(e.message, re);
      return true;
    };
  }

  describe('fetch_url with FETCH_URL_ALLOW_PRIVATE=true', () => {
    test('HTML becomes plaintext without script/style/nav, with readable absolute links', async () => {
      sim.clearRequests();
      const r = await fetchUrlTool.run({ url: page('/article') }, open());
      assert.match(r.output, /^URL: http:\/\/127\.0\.0\.1:\d+\/pages\/article\nStatus: 200\nContent-Type: text\/html\nTitle: The Quiet Life of Tide Pools\n\n/);
      assert.match(r.output, /Tide pools form where the sea retreats/);
      assert.match(r.output, /PERIWINKLE-42/);
      assert.match(r.output, /tide pool ecology \(https:\/\/example\.org\/tide-pool-ecology\)/);
      assert.match(r.output, /Privacy \(http:\/\/127\.0\.0\.1:\d+\/pages\/privacy\)/);
      assert.match(r.output, /Hermit crabs trade shells/);
      assert.doesNotMatch(r.output, /tracking|UA-SIM-1|font-family|display: none/);
      assert.doesNotMatch(r.output, /About us/); // nav
      assert.match(r.preview!, /^200 text\/html — The Quiet Life of Tide Pools: /);
      const h = sim.requests[0]!.headers;
      assert.match(String(h['user-agent']), /Mozilla\/5\.0 .*Chrome\/\d+/);
      assert.match(String(h.accept), /^text\/html,/);
      assert.equal(h['sec-fetch-mode'], 'navigate');
      assert.equal(h['sec-fetch-dest'], 'document');
      assert.ok(h['accept-language']);
    });

    test('plain text and JSON are passed through', async () => {
      const t = await fetchUrlTool.run({ url: page('/plain.txt') }, open());
      assert.match(t.output, /Content-Type: text\/plain\n\nPlain text page\.\nSecond line with the keyword PLAINTEXT-7\.\n$/);
      const j = await fetchUrlTool.run({ url: page('/data.json') }, open());
      assert.match(j.output, /Content-Type: application\/json\n\n/);
      assert.deepEqual(JSON.parse(j.output.split('\n\n').slice(1).join('\n\n')), { name: 'sim', items: [1, 2, 3], nested: { ok: true } });
    });

    test('images and binaries are refused, naming the type', async () => {
      await assert.rejects(fetchUrlTool.run({ url: page('/image.png') }, open()), toolError(/content type image\/png is not text/));
      await assert.rejects(fetchUrlTool.run({ url: `${fixtureUrl}/bin` }, open()), toolError(/application\/octet-stream\) looks binary/));
    });

    test('gzip and brotli bodies, declared charsets and untyped HTML are decoded', async () => {
      assert.match((await fetchUrlTool.run({ url: `${fixtureUrl}/gzip` }, open())).output, /Café crème — encoded body ENC-OK$/);
      assert.match((await fetchUrlTool.run({ url: `${fixtureUrl}/br` }, open())).output, /Café crème — encoded body ENC-OK$/);
      assert.match((await fetchUrlTool.run({ url: `${fixtureUrl}/latin1` }, open())).output, /\n\nCafé$/);
      assert.match((await fetchUrlTool.run({ url: `${fixtureUrl}/bom-utf8` }, open())).output, /\n\nCafé crème — encoded body ENC-OK$/);
      assert.match((await fetchUrlTool.run({ url: `${fixtureUrl}/bom-utf16` }, open())).output, /\n\nCafé crème — encoded body ENC-OK$/);
      const untyped = await fetchUrlTool.run({ url: `${fixtureUrl}/bom-untyped` }, open());
      assert.match(untyped.output, /\n\nCafé crème — encoded body ENC-OK$/, 'UTF-16 with a BOM is text, not binary, and its HTML is converted');
      const sniffed = await fetchUrlTool.run({ url: `${fixtureUrl}/untyped` }, open());
      assert.match(sniffed.output, /\n\nsniffed html$/);
    });

    test('the download stops at the size cap and the output says so', async () => {
      const capped = createFetchUrlTool({ maxBytes: 1024 * 1024 });
      const r = await capped.run({ url: page('/big') }, open());
      assert.match(r.output, /Note: download stopped at 1048576 bytes/);
      // The default tool reads the whole ~3 MB page but returns at most 100,000 characters.
      const full = await fetchUrlTool.run({ url: page('/big') }, open());
      assert.doesNotMatch(full.output, /download stopped/);
      assert.match(full.output, /\[page text truncated: showing the first 100000 of \d+ characters\]$/);
      assert.ok(full.output.length < 100_500);
    });

    test('a page that needs gigabytes to convert fails alone, at its memory cap, not at the deadline', { timeout: 120_000 }, async () => {
      // Without a cap the conversion grew the process by gigabytes: a few such fetches at once and the
      // service is killed for lack of memory. The deadline is long so that only the cap can end it.
      const tool = createFetchUrlTool({ timeoutMs: 60_000 });
      await assert.rejects(
        tool.run({ url: `${fixtureUrl}/span-bomb` }, open()),
        toolError(/^could not convert the HTML of http:\/\/127\.0\.0\.1:\d+\/span-bomb to text: the page needs more than 512 MB to convert$/),
      );
      // The pool still converts the next page.
      assert.match((await fetchUrlTool.run({ url: `${fixtureUrl}/br` }, open())).output, /ENC-OK$/);
    });

    test('follows up to 5 redirects and refuses the 6th', async () => {
      const chain = (n: number) => {
        let u = page('/plain.txt');
        for (let i = 0; i < n; i++) u = page(`/redirect?to=${encodeURIComponent(u)}`);
        return u;
      };
      const ok = await fetchUrlTool.run({ url: chain(5) }, open());
      assert.match(ok.output, /^URL: http:\/\/127\.0\.0\.1:\d+\/pages\/plain\.txt\nRedirected from: /);
      assert.match(ok.output, /PLAINTEXT-7/);
      await assert.rejects(fetchUrlTool.run({ url: chain(6) }, open()), toolError(/too many redirects .* \(more than 5\)/));
    });

    test('times out, and stops on cancellation', async () => {
      const quick = createFetchUrlTool({ timeoutMs: 300 });
      await assert.rejects(quick.run({ url: page('/slow') }, open()), toolError(/timed out after 300 ms/));
      await assert.rejects(
        fetchUrlTool.run({ url: page('/slow') }, ctx(true, AbortSignal.timeout(200))),
        toolError(/was cancelled/),
      );
    });

    test('the deadline and a stop cover name resolution too', { timeout: 30_000 }, async () => {
      // A resolver that never answers, as a name whose DNS servers drop queries (the system resolver
      // then takes its own retries, tens of seconds, and cannot be cancelled).
      let asked = 0;
      const stuck = { resolve: () => { asked++; return new Promise<never>(() => {}); } };
      await assert.rejects(
        createFetchUrlTool({ ...stuck, timeoutMs: 300 }).run({ url: 'http://slow-dns.example/' }, open()),
        toolError(/^fetching http:\/\/slow-dns\.example\/ timed out after 300 ms$/),
      );
      const controller = new AbortController();
      const running = createFetchUrlTool(stuck).run({ url: 'http://slow-dns.example/' }, ctx(false, controller.signal));
      await waitFor(() => asked === 2, 10_000, 'the second lookup to start');
      controller.abort(new Error('stopped by request'));
      await assert.rejects(running, toolError(/was cancelled/));
    });

    test('only http and https; arguments are checked', async () => {
      await assert.rejects(fetchUrlTool.run({ url: 'file:///etc/passwd' }, open()), toolError(/only http and https/));
      await assert.rejects(fetchUrlTool.run({ url: 'not a url' }, open()), toolError(/is not an absolute URL/));
      await assert.rejects(fetchUrlTool.run({}, open()), toolError(/argument "url"/));
    });
  });

  describe('fetch_url private-address refusal (FETCH_URL_ALLOW_PRIVATE off)', () => {
    const port = () => new URL(sim.urls.pages).port;
    const refused = (url: string, address: string, reason: string) =>
      toolError(
        new RegExp(
          `^refusing to fetch ${url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: address ${address.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is ${reason} \\(set FETCH_URL_ALLOW_PRIVATE=true to allow\\)$`,
        ),
      );

    test('loopback by address, by name and as IPv6; metadata and private ranges', async () => {
      sim.clearRequests();
      const off = ctx(false);
      const u1 = `http://127.0.0.1:${port()}/pages/plain.txt`;
      await assert.rejects(fetchUrlTool.run({ url: u1 }, off), refused(u1, '127.0.0.1', 'loopback'));
      const u2 = `http://localhost:${port()}/pages/plain.txt`;
      await assert.rejects(fetchUrlTool.run({ url: u2 }, off), toolError(/^refusing to fetch http:\/\/localhost:\d+\/pages\/plain\.txt: address (127\.0\.0\.1|::1) is loopback/));
      const u3 = `http://[::1]:${port()}/pages/plain.txt`;
      await assert.rejects(fetchUrlTool.run({ url: u3 }, off), refused(u3, '::1', 'loopback'));
      const u4 = 'http://169.254.169.254/latest/meta-data/';
      await assert.rejects(fetchUrlTool.run({ url: u4 }, off), refused(u4, '169.254.169.254', 'link-local \\(cloud metadata service\\)'));
      await assert.rejects(fetchUrlTool.run({ url: 'http://10.1.2.3/' }, off), toolError(/address 10\.1\.2\.3 is private \(RFC 1918\)/));
      await assert.rejects(fetchUrlTool.run({ url: 'http://0x7f000001/' }, off), toolError(/address 127\.0\.0\.1 is loopback/));
      await assert.rejects(fetchUrlTool.run({ url: 'http://[::ffff:127.0.0.1]/' }, off), toolError(/is loopback \(IPv4 127\.0\.0\.1 inside an IPv6 address\)/));
      assert.equal(sim.requests.length, 0, 'nothing reached the server');
    });

    test('every hop is checked: a public-looking URL redirecting to loopback is refused at the redirect', async () => {
      const hooked = createFetchUrlTool({
        resolve: async (host) => (host === 'public.example' ? [{ address: '127.0.0.1', family: 4 }] : systemResolver(host)),
        checkAddress: (address, url) => (url.hostname === 'public.example' ? null : defaultAddressCheck(address, url)),
      });
      sim.clearRequests();
      // The first hop alone works (and went to the pinned address: public.example is in no DNS).
      const ok = await hooked.run({ url: `http://public.example:${port()}/pages/plain.txt` }, ctx(false));
      assert.match(ok.output, /PLAINTEXT-7/);
      assert.equal(sim.requests[0]!.headers.host, `public.example:${port()}`);
      for (const target of [`http://127.0.0.1:${port()}/pages/plain.txt`, `http://localhost:${port()}/pages/plain.txt`]) {
        sim.clearRequests();
        const start = `http://public.example:${port()}/pages/redirect?to=${encodeURIComponent(target)}`;
        await assert.rejects(hooked.run({ url: start }, ctx(false)), toolError(/^refusing to fetch http:\/\/(127\.0\.0\.1|localhost):\d+\/pages\/plain\.txt: address \S+ is loopback/));
        assert.deepEqual(sim.requests.map((r) => r.path), ['/pages/redirect'], 'the loopback target was never requested');
      }
    });

    test('one bad address among several refuses the name', async () => {
      const hooked = createFetchUrlTool({
        resolve: async () => [{ address: '93.184.215.14', family: 4 }, { address: '10.0.0.5', family: 4 }],
      });
      await assert.rejects(hooked.run({ url: 'http://mixed.example/' }, ctx(false)), toolError(/address 10\.0\.0\.5 is private/));
    });
  });

  test('address classification', () => {
    const cases: [string, string | null][] = [
      ['8.8.8.8', null],
      ['2606:4700:4700::1111', null],
      ['127.0.0.1', 'loopback'],
      ['::1', 'loopback'],
      ['10.0.0.1', 'private (RFC 1918)'],
      ['172.16.5.4', 'private (RFC 1918)'],
      ['192.168.1.1', 'private (RFC 1918)'],
      ['fd12:3456::1', 'private (unique local, fc00::/7)'],
      ['169.254.169.254', 'link-local (cloud metadata service)'],
      ['169.254.1.1', 'link-local'],
      ['fe80::1', 'link-local'],
      ['100.64.0.1', 'carrier-grade NAT (100.64.0.0/10)'],
      ['0.0.0.0', 'unspecified'],
      ['::', 'unspecified'],
      ['224.0.0.1', 'multicast'],
      ['ff02::1', 'multicast'],
      ['255.255.255.255', 'broadcast'],
      ['240.0.0.1', 'reserved'],
      ['::ffff:10.0.0.1', 'private (RFC 1918) (IPv4 10.0.0.1 inside an IPv6 address)'],
      ['::ffff:8.8.8.8', null],
      ['64:ff9b::7f00:1', 'loopback (IPv4 127.0.0.1 inside an IPv6 address)'],
      ['2002:a9fe:a9fe::1', 'link-local (cloud metadata service) (IPv4 169.254.169.254 inside an IPv6 address)'],
    ];
    for (const [ip, want] of cases) assert.equal(classifyAddress(ip), want, ip);
  });

  describe('fetch_url and a stopped run', () => {
    test("the run's signal aborts a fetch in flight: the tool fails at once and the connection is closed", async () => {
      const controller = new AbortController();
      const running = fetchUrlTool.run({ url: `${fixtureUrl}/hang` }, ctx(true, controller.signal));
      // Stopped once the request is in flight: the fixture has it (and never answers).
      await waitFor(() => hangClosed !== undefined, 10_000, 'the request to reach the fixture');
      controller.abort(new Error('stopped by request'));
      // The fixture never answers, so the error can only be the stop's (a timeout reads "timed out").
      await assert.rejects(running, toolError(/cancelled/));
      await hangClosed;
    });
  });
});
