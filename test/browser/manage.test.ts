// Managing chats and searches from the web client in real Chromium against the real service: rename,
// delete after a confirmation (cancel keeps the item), and a chat's settings (enabledTools, the
// additional system prompt, the model it used) as the API stores them, also before the first message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkipReason, browserSuite } from '../helpers/browser.ts';
import { sim, waitFor } from '../helpers/server.ts';
import { chatIdOf, idle, MODEL, sendInNewChat } from './ui.ts';

const skip = browserSkipReason();

describe('web client: rename, delete, settings', { skip: skip ?? false }, () => {
  const web = browserSuite();

  const chat = async (id: string) => web.server.call('GET', `/v1/chats/${id}`);
  const sidebarLabels = () => web.page.locator('#items li a').allTextContents();

  it('renames a chat: the title, the list and the stored chat follow', async () => {
    await sendInNewChat(web.page, web.server.url, sim({ reply: 'ok' }, 'first'));
    await idle(web.page);
    const id = chatIdOf(web.page);
    await web.page.click('.view-head .rename');
    await web.page.fill('.rename-form input[name=title]', '  Tide pool notes  ');
    await web.page.click('.rename-form button[type=submit]');
    await web.page.waitForFunction(() => document.querySelector('.view-head .title')?.textContent === 'Tide pool notes');
    assert.equal(await web.page.isVisible('.rename-form'), false);
    assert.equal((await chat(id)).body.chat.title, 'Tide pool notes');
    await waitFor(async () => (await sidebarLabels()).some((l) => l.endsWith('Tide pool notes')), 10_000, 'the list shows the new title');
    assert.deepEqual(web.watch.errors, []);
  });

  it('an address whose id is badly encoded says the chat was not found, and the page goes on', async () => {
    await sendInNewChat(web.page, web.server.url, sim({ reply: 'ok' }, 'kept'));
    await idle(web.page);
    const id = chatIdOf(web.page);
    await web.page.goto(`${web.server.url}/#chat/%E0%A4%A`);
    await web.page.waitForFunction(() => /chat not found/.test(document.querySelector('main')?.textContent ?? ''));
    await web.page.evaluate((to) => (location.hash = `#chat/${to}`), id);
    await web.page.waitForFunction(() => /kept/.test(document.querySelector('.msg.user .body')?.textContent ?? ''));
    assert.deepEqual(web.watch.errors.filter((e) => !/^404 \/v1\/chats\//.test(e)), []);
    web.watch.errors.length = 0;
  });

  it('deletes a chat only once confirmed', async () => {
    await sendInNewChat(web.page, web.server.url, sim({ reply: 'ok' }, 'to delete'));
    await idle(web.page);
    const id = chatIdOf(web.page);
    await web.page.click('.view-head .delete');
    await web.page.waitForSelector('#confirm-dialog[open]');
    assert.match((await web.page.textContent('#confirm-text'))!, /Delete the chat/);
    await web.page.click('#confirm-dialog button[value=cancel]');
    await web.page.waitForSelector('#confirm-dialog', { state: 'hidden' });
    assert.equal((await chat(id)).status, 200, 'cancel keeps the chat');

    await web.page.click('.view-head .delete');
    await web.page.click('#confirm-dialog button[value=ok]');
    await web.page.waitForFunction(() => location.hash === '#new-chat');
    assert.equal((await chat(id)).status, 404);
    await web.page.waitForFunction((href) => !document.querySelector(`#items a[href="${href}"]`), `#chat/${id}`);
    assert.deepEqual(web.watch.errors, []);
  });

  it('deletes a search only once confirmed', async () => {
    const { body } = await web.server.call('POST', '/v1/searches', { query: 'kelp forests' });
    const id = body.search.id;
    await web.page.goto(`${web.server.url}/#search/${id}`);
    await web.page.click('.view-head .delete');
    await web.page.click('#confirm-dialog button[value=cancel]');
    assert.equal((await web.server.call('GET', `/v1/searches/${id}`)).status, 200, 'cancel keeps the search');
    await web.page.click('.view-head .delete');
    assert.match((await web.page.textContent('#confirm-text'))!, /kelp forests/);
    await web.page.click('#confirm-dialog button[value=ok]');
    await web.page.waitForFunction(() => location.hash === '#new-search');
    assert.equal((await web.server.call('GET', `/v1/searches/${id}`)).status, 404);
    assert.deepEqual(web.watch.errors, []);
  });

  it('stores a chat\'s tools and system prompt, shows them after a reload, and the next answer uses the prompt', async () => {
    await sendInNewChat(web.page, web.server.url, sim({ reply: 'ok' }, 'settings'), 'provider_c:sim-c-large');
    await idle(web.page);
    const id = chatIdOf(web.page);
    await web.page.click('.settings summary');
    await web.page.locator('.settings input[name=tool][value=fetch_url]').waitFor();
    assert.equal(await web.page.isChecked('.settings input[name=tool][value=fetch_url]'), true, 'a new chat has every tool');
    assert.match((await web.page.textContent('.model-note'))!, /sim-c-large · provider_c/);
    await web.page.uncheck('.settings input[name=tool][value=fetch_url]');
    await web.page.fill('.settings textarea[name=prompt]', 'Answer like a marine biologist.');
    await web.page.click('.settings button[type=submit]');
    await web.page.waitForFunction(() => document.querySelector('.settings-status')?.textContent === 'Saved.');
    const stored = (await chat(id)).body.chat;
    assert.equal(stored.additionalSystemPrompt, 'Answer like a marine biologist.');
    assert.deepEqual(stored.enabledTools, ['web_search']);

    await web.page.reload();
    await web.page.click('.settings summary');
    await web.page.locator('.settings input[name=tool][value=web_search]').waitFor();
    assert.equal(await web.page.inputValue('.settings textarea[name=prompt]'), 'Answer like a marine biologist.');
    assert.equal(await web.page.isChecked('.settings input[name=tool][value=fetch_url]'), false);
    assert.equal(await web.page.isChecked('.settings input[name=tool][value=web_search]'), true);

    await web.page.fill('textarea[name=text]', sim({ echoSystem: true }, 'who are you?'));
    await web.page.keyboard.press('Enter');
    await web.page.waitForFunction(() => /marine biologist/.test(document.querySelectorAll('.msg.assistant .body')[1]?.textContent ?? ''));
    assert.deepEqual(web.watch.errors, []);
  });

  it('settings saved before the first message create the chat with them', async () => {
    await web.page.goto(`${web.server.url}/#new-chat`);
    await web.page.locator(`#model option[value="${MODEL}"]`).waitFor({ state: 'attached' });
    await web.page.selectOption('#model', MODEL);
    await web.page.click('.settings summary');
    await web.page.fill('.settings textarea[name=prompt]', 'Be brief.');
    await web.page.click('.settings button[type=submit]');
    await web.page.waitForFunction(() => /^#chat\//.test(location.hash));
    const stored = (await chat(chatIdOf(web.page))).body.chat;
    assert.equal(stored.additionalSystemPrompt, 'Be brief.');
    assert.equal(await web.page.isVisible('.view-head .rename'), true);
    assert.deepEqual(web.watch.errors, []);
  });
});
