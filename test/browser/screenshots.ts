// Remakes the web client's screenshots in docs/ (not a test): `node --import tsx test/browser/screenshots.ts`.
// A real server on the simulator, a chat with a tool call and a Markdown answer with code, a search with
// citations and the history search box listing what matches a word (needs the history search API).
// The simulator's `SIM {…}` scripting lines are hidden in the pictures: they are not what a user types.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchBrowser } from '../helpers/browser.ts';
import { sim, startTestServer } from '../helpers/server.ts';

const docs = fileURLToPath(new URL('../../docs/', import.meta.url));
const server = await startTestServer();
const browser = await launchBrowser();
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const idle = () => page.waitForFunction(() => document.querySelector('.msg.assistant') && !document.querySelector('[aria-busy]'));
  const hideSimLines = () => page.evaluate(`document.querySelectorAll('.msg.user .body').forEach((b) => (b.textContent = b.textContent.split('\\nSIM ')[0]))`);

  // A chat: a tool call, then a Markdown answer with a highlighted code block.
  await page.goto(`${server.url}/#new-chat`);
  await page.selectOption('#model', 'provider_c:sim-c-large');
  const reply = [
    '## Tide pools',
    '',
    'Rocky hollows that keep **sea water at low tide**. The search found guides on what lives in them:',
    '',
    '- anemones and sea stars on the rock faces,',
    '- crabs and small fish under the stones.',
    '',
    'To log what you see on a visit:',
    '',
    '```ts',
    "const seen = new Map<string, number>();",
    "function spot(animal: string): void {",
    "  seen.set(animal, (seen.get(animal) ?? 0) + 1);",
    '}',
    '```',
  ].join('\n');
  await page.fill('textarea[name=text]', sim({ tools: [{ name: 'web_search', args: { query: 'tide pool animals' } }], reply, rate: 40 }, 'What lives in tide pools?'));
  await page.press('textarea[name=text]', 'Enter');
  await idle();
  const chatId = decodeURIComponent(new URL(page.url()).hash.replace('#chat/', ''));
  await server.call('PATCH', `/v1/chats/${chatId}`, { title: 'Tide pools' });
  await page.reload();
  await page.waitForSelector('.msg.assistant pre code.hljs');
  await hideSimLines();
  await page.screenshot({ path: path.join(docs, 'web-chat.png') });

  // A search with citations, then the history search box finding it and the chat by a word.
  await page.goto(`${server.url}/#new-search`);
  await page.fill('input[name=query]', 'tide pool ecology');
  await page.press('input[name=query]', 'Enter');
  await page.waitForSelector('.citations li');
  await page.click('#items li.search .star');
  await page.fill('#history-search input[name=q]', 'tide');
  await page.waitForSelector('#items .snippet');
  await page.screenshot({ path: path.join(docs, 'web-search.png') });
} finally {
  await browser.close();
  await server.close();
}
