// The web client in token mode and its search view, in real Chromium: the page asks for the token
// once and keeps it, a search shows its results, answer and citations (as stored), and "continue as
// chat" opens the seeded chat; a search opened as its run ends shows what was stored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkipReason, browserSuite } from '../helpers/browser.ts';
import { waitFor } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const skip = browserSkipReason();
const TOKEN = 'browser-test-token';

describe('web client: token prompt and search', { skip: skip ?? false }, () => {
  const web = browserSuite({ server: { env: { ADMIN_TOKEN: TOKEN } } });
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('asks for the token on the first 401, refuses a wrong one, keeps the right one across reloads', async () => {
    await web.page.goto(`${web.server.url}/`);
    await web.page.fill('#token-dialog input[name=token]', 'wrong');
    await web.page.click('#token-dialog button[value=ok]');
    await web.page.waitForFunction(() => document.querySelector('#token-dialog .reason')?.textContent?.includes('refused'));
    await web.page.fill('#token-dialog input[name=token]', TOKEN);
    await web.page.click('#token-dialog button[value=ok]');
    await web.page.waitForSelector('#model option', { state: 'attached' });
    assert.equal(await web.page.evaluate(() => localStorage.getItem('conversations.token')), TOKEN);
    await web.page.reload();
    await web.page.waitForSelector('#model option', { state: 'attached' });
    assert.equal(await web.page.isVisible('#token-dialog'), false);
    // The 401s were the point here; nothing else failed.
    assert.deepEqual(web.watch.errors.filter((e) => !e.startsWith('401 ')), []);
    web.watch.errors.length = 0;
  });

  it('shows results, the answer and its citations, then continues the search as a chat', async () => {
    await web.page.goto(`${web.server.url}/#new-search`);
    await web.page.fill('input[name=query]', 'tide pool ecology');
    await web.page.press('input[name=query]', 'Enter');
    await web.page.waitForSelector('.citations li');
    await web.page.waitForFunction(() => !document.querySelector('[aria-busy]'));
    const searchId = decodeURIComponent(new URL(web.page.url()).hash.replace('#search/', ''));
    const { body } = await web.server.call('GET', `/v1/searches/${searchId}`, undefined, auth);
    const stored = body.search;
    assert.ok(stored.answerCitations.length > 0 && stored.results.length > 0);
    const shownCitations = await web.page.$$eval('.citations li a', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(shownCitations, stored.answerCitations.map((c: { url: string }) => c.url));
    const shownResults = await web.page.$$eval('.result-list li a', (as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(shownResults, stored.results.map((r: { url: string }) => r.url));
    assert.equal(await web.page.textContent('.answer-text'), stored.answerText);
    // The search is in the workspace list, and opens again with what was stored.
    await web.page.waitForSelector(`#items a[href="#search/${searchId}"]`);
    await web.page.reload();
    await web.page.waitForSelector('.citations li');
    assert.equal(await web.page.textContent('.answer-text'), stored.answerText);

    await web.page.click('.to-chat');
    await web.page.waitForURL(/#chat\//);
    await web.page.waitForSelector('.msg.system details');
    assert.equal(await web.page.textContent('.view.chat .title'), 'Search: tide pool ecology');
    assert.deepEqual(web.watch.errors, []);
  });

  it('opened just as its run ends, shows the stored results and answer (the attach finds nothing running)', async () => {
    const gate = gateName();
    await web.page.goto(`${web.server.url}/#new-search`);
    await web.page.fill('input[name=query]', `rock pools SIM ${JSON.stringify({ searchGate: gate })}`);
    await web.page.press('input[name=query]', 'Enter');
    await waitFor(() => web.server.sim.heldAt(gate) === 1, 10_000, 'the engine call to be held');
    const searchId = decodeURIComponent(new URL(web.page.url()).hash.replace('#search/', ''));
    // The page reads the search while its run is held, then asks to attach only once the run is over.
    await web.page.route('**/run/stream/attach', async (route) => {
      web.server.sim.openGate(gate);
      await waitFor(async () => (await web.server.call('GET', '/v1/active-runs', undefined, auth)).body.searches.includes(searchId) === false, 10_000, 'the run to end');
      await route.continue();
    });
    try {
      await web.page.reload();
      await web.page.waitForSelector('.result-list li');
    } finally {
      await web.page.unroute('**/run/stream/attach');
    }
    const { body } = await web.server.call('GET', `/v1/searches/${searchId}`, undefined, auth);
    assert.equal(await web.page.textContent('.answer-text'), body.search.answerText);
    assert.deepEqual(web.watch.errors, []);
  });
});
