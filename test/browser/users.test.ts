// The web client with users, in real Chromium: it signs in with a user's API key through its token
// prompt, shows whose workspace it is and only that workspace's items, and signs out, after which
// another key (here the admin token) opens another workspace.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkipReason, browserSuite } from '../helpers/browser.ts';
import { ADMIN_TOKEN } from '../helpers/users.ts';

const skip = browserSkipReason();

describe('web client: signing in with a user key', { skip: skip ?? false }, () => {
  const web = browserSuite({ server: { env: { ADMIN_TOKEN } } });
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  it("shows the key's user and workspace, and signs out", async () => {
    const created = await web.server.call('POST', '/v1/users', { name: 'Wren' }, admin);
    const key = created.body.apiKey as string;
    await web.server.call('POST', '/v1/chats', { title: 'Wren list' }, { authorization: `Bearer ${key}` });
    await web.server.call('POST', '/v1/chats', { title: 'Admin only' }, admin);
    const labels = () => web.page.locator('#items li a').allTextContents();

    await web.page.goto(`${web.server.url}/`);
    await web.page.fill('#token-dialog input[name=token]', key);
    await web.page.click('#token-dialog button[value=ok]');
    await web.page.waitForSelector('#whoami:not([hidden])');
    assert.equal(await web.page.textContent('#whoami .who'), 'Wren');
    await web.page.waitForFunction(() => document.querySelectorAll('#items li a').length > 0);
    const mine = await labels();
    assert.ok(mine.some((l) => l.endsWith('Wren list')), JSON.stringify(mine));
    assert.ok(!mine.some((l) => l.endsWith('Admin only')), JSON.stringify(mine));

    await web.page.click('#whoami .sign-out');
    await web.page.waitForSelector('#token-dialog[open]');
    assert.equal(await web.page.evaluate(() => localStorage.getItem('conversations.token')), null);
    await web.page.fill('#token-dialog input[name=token]', ADMIN_TOKEN);
    await web.page.click('#token-dialog button[value=ok]');
    await web.page.waitForFunction(() => document.querySelector('#whoami .who')?.textContent === 'admin (ADMIN_TOKEN)');
    await web.page.waitForFunction(() => [...document.querySelectorAll('#items li a')].some((a) => a.textContent?.endsWith('Admin only')));
    assert.ok(!(await labels()).some((l) => l.endsWith('Wren list')));
    assert.deepEqual(web.watch.errors.filter((e) => !e.startsWith('401 ')), []);
  });
});
