// Remakes the web client's screenshots in docs/ (not a test): `node --import tsx test/browser/screenshots.ts`.
// A real server on the simulator, a chat with a tool call and an answer streaming, a search with citations.
// The simulator's `SIM {…}` scripting lines are hidden in the pictures: they are not what a user types.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from '../helpers/browser.ts';
import { sim, startTestServer } from '../helpers/server.ts';

const docs = fileURLToPath(new URL('../../docs/', import.meta.url));
const server = await startTestServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 760 } });
  const idle = () => page.waitForFunction(() => document.querySelector('.msg.assistant') && !document.querySelector('[aria-busy]'));

  await page.goto(`${server.url}/#new-search`);
  await page.fill('input[name=query]', 'tide pool ecology');
  await page.press('input[name=query]', 'Enter');
  await page.waitForSelector('.citations li');
  await page.click('#items li.search .star');
  await page.screenshot({ path: path.join(docs, 'web-search.png') });

  await page.goto(`${server.url}/#new-chat`);
  await page.selectOption('#model', 'provider_c:sim-c-large');
  const reply = 'Tide pools are rocky hollows that keep sea water at low tide. The search found guides on the anemones, crabs and sea stars that live in them, and on how to visit without harming them.';
  await page.fill('textarea[name=text]', sim({ tools: [{ name: 'web_search', args: { query: 'tide pool animals' } }], reply }, 'What lives in tide pools?'));
  await page.press('textarea[name=text]', 'Enter');
  await idle();
  const chatId = decodeURIComponent(new URL(page.url()).hash.replace('#chat/', ''));
  await server.call('PATCH', `/v1/chats/${chatId}`, { title: 'Tide pools' });
  await page.reload();
  await page.waitForSelector('.msg.assistant');
  await page.fill('textarea[name=text]', sim({ deltas: 60, rate: 10, reply: 'Go at low tide, step only on bare rock, and put back every stone you turn over, the way you found it.' }, 'How do I visit one?'));
  await page.press('textarea[name=text]', 'Enter');
  await page.waitForFunction(() => (document.querySelectorAll('.msg.assistant .body')[1]?.textContent ?? '').length > 40);
  await page.evaluate(`document.querySelectorAll('.msg.user .body').forEach((b) => (b.textContent = b.textContent.split('\\nSIM ')[0]))`);
  await page.screenshot({ path: path.join(docs, 'web-chat.png') });
  await idle();
} finally {
  await browser.close();
  await server.close();
}
