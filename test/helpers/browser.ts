// Debian's Chromium driven by playwright-core, for the web client's tests. When the browser is
// missing (and `make test` could not install it), the browser suites are skipped with a plain reason.
import { existsSync } from 'node:fs';
import { after, before } from 'node:test';
import { chromium, type Browser, type Page } from 'playwright-core';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or null when they can. */
export function browserSkipReason(): string | null {
  if (existsSync(CHROMIUM_PATH)) return null;
  const reason = `browser tests skipped: ${CHROMIUM_PATH} not found (install Debian's chromium: apt-get install chromium)`;
  console.log(reason);
  return reason;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    // Without the networking flags Chromium keeps calling home, and this machine's closed network refuses it.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** Answers the page may get without anything being wrong: nothing to re-attach to, no title model. */
const EXPECTED_FAILURES = [/\/stream\/attach$/, /\/v1\/chats\/title\/suggest$/];

/**
 * Collects what should fail a test: uncaught page errors, console errors of the page's own code, and
 * answers of 400 and above other than the expected ones (Chromium logs those as console errors too).
 */
export function watchPage(page: Page): { errors: string[] } {
  const errors: string[] = [];
  page.on('pageerror', (err) => errors.push(`pageerror: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) errors.push(`console: ${msg.text()}`);
  });
  page.on('response', (res) => {
    const path = new URL(res.url()).pathname;
    if (res.status() >= 400 && !EXPECTED_FAILURES.some((re) => re.test(path))) errors.push(`${res.status()} ${path}`);
  });
  return { errors };
}

/** A suite's test server, its Chromium and the watched page on that server; filled in by `before`. */
export interface BrowserSuite {
  server: TestServer;
  browser: Browser;
  page: Page;
  watch: { errors: string[] };
}

/**
 * Registers the suite's hooks: starts a test server (with `server` options) and Chromium together,
 * opens a watched page (in a context granted `permissions` on the server's origin, when asked for),
 * and closes both after the suite. Call it in the describe body; read the fields inside tests.
 */
export function browserSuite(opts: { server?: TestServerOptions; permissions?: string[] } = {}): BrowserSuite {
  const suite = {} as BrowserSuite;
  before(async () => {
    [suite.server, suite.browser] = await Promise.all([startTestServer(opts.server), launchBrowser()]);
    if (opts.permissions) {
      const context = await suite.browser.newContext();
      await context.grantPermissions(opts.permissions, { origin: suite.server.url });
      suite.page = await context.newPage();
    } else {
      suite.page = await suite.browser.newPage();
    }
    suite.watch = watchPage(suite.page);
  });
  after(async () => {
    await suite.browser?.close();
    await suite.server?.close();
  });
  return suite;
}

/**
 * Records every text the last element matching `selector` shows, as it changes (window.__texts).
 * A string, not a function: tsx would wrap named functions in a helper the page does not have.
 */
export async function recordTexts(page: Page, selector: string): Promise<void> {
  await page.evaluate(`(() => {
    const sel = ${JSON.stringify(selector)};
    window.__texts = [];
    new MutationObserver(() => {
      const all = document.querySelectorAll(sel);
      const text = all.length ? all[all.length - 1].textContent : '';
      if (window.__texts[window.__texts.length - 1] !== text) window.__texts.push(text);
    }).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
  })()`);
}

export const recordedTexts = (page: Page): Promise<string[]> => page.evaluate('window.__texts');
