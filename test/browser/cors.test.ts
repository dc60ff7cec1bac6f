// The web client on another origin (a second local port), in real Chromium: with CORS_ORIGINS naming
// that origin it streams a chat and re-attaches after a reload; without it the browser refuses the
// API's answers and nothing is started.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { loadWebClient } from '../../src/routes/web.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { browserSkipReason, launchBrowser } from '../helpers/browser.ts';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const skip = browserSkipReason();
const ANSWER = '.msg.assistant .body';

describe('web client on another origin', { skip: skip ?? false }, () => {
  let simulator: SimHandle;
  let browser: Browser;
  const closers: Array<() => Promise<unknown>> = [];

  before(async () => {
    [simulator, browser] = await Promise.all([startSimulator({ defaultReply: { mode: 'echo' } }), launchBrowser()]);
  });
  after(async () => {
    for (const close of closers.reverse()) await close();
    await browser?.close();
    await simulator?.close();
  });

  /** A service (CORS_ORIGINS as given, `{origin}` replaced) and a page for it on a second port. */
  async function setUp(corsOrigins: string | null): Promise<{ api: TestServer; page: Page; origin: string }> {
    // The page's port must be known before the service starts, so the page server starts first, on
    // a placeholder base that the service's address replaces below.
    const holder = { base: '' };
    const client = loadWebClient();
    const pageServer = createServer((req, res) => {
      const name = /^\/assets\/[^/]+\/([^/?]+)/.exec(req.url ?? '')?.[1];
      const asset = name ? client.assets.get(name) : undefined;
      if (asset) return res.writeHead(200, { 'content-type': asset.contentType }).end(asset.body);
      if (req.url !== '/') return res.writeHead(404).end();
      const html = client.page.toString().replace('<head>', `<head>\n<meta name="api-base" content="${holder.base}/">`);
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(html);
    });
    await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise((r) => pageServer.close(r)));
    const origin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
    const env: Record<string, string> = corsOrigins === null ? {} : { CORS_ORIGINS: corsOrigins.replace('{origin}', origin) };
    const api = await startTestServer({ sim: simulator, env });
    closers.push(() => api.close());
    holder.base = api.url;
    const page = await browser.newPage();
    closers.push(() => page.close());
    return { api, page, origin };
  }

  it('streams and re-attaches after a reload when CORS_ORIGINS names the page origin', async () => {
    const { api, page, origin } = await setUp('{origin}');
    await page.goto(`${origin}/`);
    await page.locator('#model option[value="provider_c:sim-c-large"]').waitFor({ state: 'attached' });
    await page.selectOption('#model', 'provider_c:sim-c-large');
    // Held after half its deltas until the page has re-attached, so the run cannot end before.
    const gate = gateName();
    await page.fill('textarea[name=text]', sim({ deltas: 40, rate: 8, gate, gateAfter: 20 }, 'from another origin'));
    await page.keyboard.press('Enter');
    await page.waitForFunction((sel) => (document.querySelector(sel)?.textContent ?? '').length > 10, ANSWER);
    const before = (await page.textContent(ANSWER))!;
    const chatId = decodeURIComponent(new URL(page.url()).hash.replace('#chat/', ''));
    await page.reload();
    await page.waitForSelector('.msg.assistant[aria-busy=true]');
    assert.ok((await page.textContent(ANSWER))!.startsWith(before), 'the re-attached stream replays what was shown');
    simulator.openGate(gate);
    await page.waitForFunction(() => document.querySelector('.msg.assistant') && !document.querySelector('[aria-busy]'));
    const { body } = await api.call('GET', `/v1/chats/${chatId}`);
    const stored = body.chat.messages.find((m: { role: string }) => m.role === 'assistant').content;
    assert.ok(stored.length > before.length);
    assert.equal(await page.textContent(ANSWER), stored);
  });

  it('is refused by the browser without CORS_ORIGINS, and starts nothing', async () => {
    const { api, page, origin } = await setUp(null);
    const refused: string[] = [];
    page.on('requestfailed', (req) => refused.push(new URL(req.url()).pathname));
    await page.goto(`${origin}/`);
    await page.waitForSelector('main .status.error');
    assert.match((await page.textContent('main .status.error'))!, /Failed to fetch/);
    assert.ok(refused.includes('/v1/auth/session'), `refused: ${refused.join(', ')}`);
    // A stream start needs a preflight (a JSON body): refused there, the POST itself is never sent.
    const outcome = await page.evaluate(
      `fetch(${JSON.stringify(api.url + '/v1/chat-completions/stream')}, { method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ provider: 'provider_c', model: 'sim-c-large', messages: [{ role: 'user', content: 'hi' }] }) })
        .then(() => 'answered', (err) => err.message)`,
    );
    assert.equal(outcome, 'Failed to fetch');
    const { body } = await api.call('GET', '/v1/workspace-items');
    assert.deepEqual(body.items, []);
  });
});
