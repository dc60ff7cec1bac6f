// The web client in token mode and its search view, in real Chromium: the page asks for the token
// once and keeps it, a search shows its results, answer and citations (as stored), and "continue as
// chat" opens the seeded chat.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkipReason, launchBrowser, watchPage } from '../helpers/browser.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const skip = browserSkipReason();
const TOKEN = 'browser-test-token';

describe('web client: token prompt and search', { skip: skip ?? false }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let watch: { errors: string[] };
  const auth = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    [server, browser] = await Promise.all([startTestServer({ env: { ADMIN_TOKEN: TOKEN } }), launchBrowser()]);
    page = await browser.newPage();
    watch = watchPage(page);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  it('asks for the token on the first 401, refuses a wrong one, keeps the right one across reloads', async () => {
    await page.goto(`${server.url}/`);
    await page.fill('#token-dialog input[name=token]', 'wrong');
    await page.click('#token-dialog button[value=ok]');
    await page.waitForFunction(() => document.querySelector('#token-dialog .reason')?.textContent?.includes('refused'));
    await page.fill('#token-dialog input[name=token]', TOKEN);
    await page.click('#token-dialog button[value=ok]');
    await page.waitForSelector('#model option', { state: 'attached' });
    assert.equal(await page.evaluate(() => localStorage.getItem('conversations.token')), TOKEN);
    await page.reload();
    await page.waitForSelector('#model option', { state: 'attached' });
    assert.equal(await page.isVisible('#token-dialog'), false);
    // The 401s were the point here; nothing else failed.
    assert.deepEqual(watch.errors.filter((e) => !e.startsWith('401 ')), []);
    watch.errors.length = 0;
  });

  it('shows results, the answer and its citations, then continues the search as a chat', async () => {
    await page.goto(`${server.url}/#new-search`);
    await page.fill('input[name=query]', 'tide pool ecology');
    await page.press('input[name=query]', 'Enter');
    await page.waitForSelector('.citations li');
    await page.waitForFunction(() => !document.querySelector('[aria-busy]'));
    const searchId = decodeURIComponent(new URL(page.url()).hash.replace('#search/', ''));
    const { body } = await server.call('GET', `/v1/searches/${searchId}`, undefined, auth);
    const stored = body.search;
    assert.ok(stored.answerCitations.length > 0 && stored.results.length > 0);
    const shownCitations = await page.$$eval('.citations li a', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(shownCitations, stored.answerCitations.map((c: { url: string }) => c.url));
    const shownResults = await page.$$eval('.result-list li a', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(shownResults, stored.results.map((r: { url: string }) => r.url));
    assert.equal(await page.textContent('.answer-text'), stored.answerText);
    // The search is in the workspace list, and opens again with what was stored.
    await page.waitForSelector(`#items a[href="#search/${searchId}"]`);
    await page.reload();
    await page.waitForSelector('.citations li');
    assert.equal(await page.textContent('.answer-text'), stored.answerText);

    await page.click('.to-chat');
    await page.waitForURL(/#chat\//);
    await page.waitForSelector('.msg.system details');
    assert.equal(await page.textContent('.view.chat .title'), 'Search: tide pool ecology');
    assert.deepEqual(watch.errors, []);
  });
});
