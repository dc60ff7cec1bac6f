// Managing chats and searches from the web client in real Chromium against the real service: rename,
// delete after a confirmation (cancel keeps the item), and a chat's settings (enabledTools, the
// additional system prompt, the model it used) as the API stores them, also before the first message.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { browserSkipReason, launchBrowser, watchPage } from '../helpers/browser.ts';
import { sim, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';
import { chatIdOf, idle, MODEL, sendInNewChat } from './ui.ts';

const skip = browserSkipReason();

describe('web client: rename, delete, settings', { skip: skip ?? false }, () => {
  let server: TestServer;
  let browser: Browser;
  let page: Page;
  let watch: { errors: string[] };

  before(async () => {
    [server, browser] = await Promise.all([startTestServer(), launchBrowser()]);
    page = await browser.newPage();
    watch = watchPage(page);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });

  const chat = async (id: string) => server.call('GET', `/v1/chats/${id}`);
  const sidebarLabels = () => page.locator('#items li a').allTextContents();

  it('renames a chat: the title, the list and the stored chat follow', async () => {
    await sendInNewChat(page, server.url, sim({ reply: 'ok' }, 'first'));
    await idle(page);
    const id = chatIdOf(page);
    await page.click('.view-head .rename');
    await page.fill('.rename-form input[name=title]', '  Tide pool notes  ');
    await page.click('.rename-form button[type=submit]');
    await page.waitForFunction(() => document.querySelector('.view-head .title')?.textContent === 'Tide pool notes');
    assert.equal(await page.isVisible('.rename-form'), false);
    assert.equal((await chat(id)).body.chat.title, 'Tide pool notes');
    await waitFor(async () => (await sidebarLabels()).some((l) => l.endsWith('Tide pool notes')), 10_000, 'the list shows the new title');
    assert.deepEqual(watch.errors, []);
  });

  it('deletes a chat only once confirmed', async () => {
    await sendInNewChat(page, server.url, sim({ reply: 'ok' }, 'to delete'));
    await idle(page);
    const id = chatIdOf(page);
    await page.click('.view-head .delete');
    await page.waitForSelector('#confirm-dialog[open]');
    assert.match((await page.textContent('#confirm-text'))!, /Delete the chat/);
    await page.click('#confirm-dialog button[value=cancel]');
    await page.waitForSelector('#confirm-dialog', { state: 'hidden' });
    assert.equal((await chat(id)).status, 200, 'cancel keeps the chat');

    await page.click('.view-head .delete');
    await page.click('#confirm-dialog button[value=ok]');
    await page.waitForFunction(() => location.hash === '#new-chat');
    assert.equal((await chat(id)).status, 404);
    await page.waitForFunction((href) => !document.querySelector(`#items a[href="${href}"]`), `#chat/${id}`);
    assert.deepEqual(watch.errors, []);
  });

  it('deletes a search only once confirmed', async () => {
    const { body } = await server.call('POST', '/v1/searches', { query: 'kelp forests' });
    const id = body.search.id;
    await page.goto(`${server.url}/#search/${id}`);
    await page.click('.view-head .delete');
    await page.click('#confirm-dialog button[value=cancel]');
    assert.equal((await server.call('GET', `/v1/searches/${id}`)).status, 200, 'cancel keeps the search');
    await page.click('.view-head .delete');
    assert.match((await page.textContent('#confirm-text'))!, /kelp forests/);
    await page.click('#confirm-dialog button[value=ok]');
    await page.waitForFunction(() => location.hash === '#new-search');
    assert.equal((await server.call('GET', `/v1/searches/${id}`)).status, 404);
    assert.deepEqual(watch.errors, []);
  });

  it('stores a chat\'s tools and system prompt, shows them after a reload, and the next answer uses the prompt', async () => {
    await sendInNewChat(page, server.url, sim({ reply: 'ok' }, 'settings'), 'provider_c:sim-c-large');
    await idle(page);
    const id = chatIdOf(page);
    await page.click('.settings summary');
    await page.locator('.settings input[name=tool][value=fetch_url]').waitFor();
    assert.equal(await page.isChecked('.settings input[name=tool][value=fetch_url]'), true, 'a new chat has every tool');
    assert.match((await page.textContent('.model-note'))!, /sim-c-large · provider_c/);
    await page.uncheck('.settings input[name=tool][value=fetch_url]');
    await page.fill('.settings textarea[name=prompt]', 'Answer like a marine biologist.');
    await page.click('.settings button[type=submit]');
    await page.waitForFunction(() => document.querySelector('.settings-status')?.textContent === 'Saved.');
    const stored = (await chat(id)).body.chat;
    assert.equal(stored.additionalSystemPrompt, 'Answer like a marine biologist.');
    assert.deepEqual(stored.enabledTools, ['web_search']);

    await page.reload();
    await page.click('.settings summary');
    await page.locator('.settings input[name=tool][value=web_search]').waitFor();
    assert.equal(await page.inputValue('.settings textarea[name=prompt]'), 'Answer like a marine biologist.');
    assert.equal(await page.isChecked('.settings input[name=tool][value=fetch_url]'), false);
    assert.equal(await page.isChecked('.settings input[name=tool][value=web_search]'), true);

    await page.fill('textarea[name=text]', sim({ echoSystem: true }, 'who are you?'));
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => /marine biologist/.test(document.querySelectorAll('.msg.assistant .body')[1]?.textContent ?? ''));
    assert.deepEqual(watch.errors, []);
  });

  it('settings saved before the first message create the chat with them', async () => {
    await page.goto(`${server.url}/#new-chat`);
    await page.locator(`#model option[value="${MODEL}"]`).waitFor({ state: 'attached' });
    await page.selectOption('#model', MODEL);
    await page.click('.settings summary');
    await page.fill('.settings textarea[name=prompt]', 'Be brief.');
    await page.click('.settings button[type=submit]');
    await page.waitForFunction(() => /^#chat\//.test(location.hash));
    const stored = (await chat(chatIdOf(page))).body.chat;
    assert.equal(stored.additionalSystemPrompt, 'Be brief.');
    assert.equal(await page.isVisible('.view-head .rename'), true);
    assert.deepEqual(watch.errors, []);
  });
});
