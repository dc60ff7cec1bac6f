// The web client's Markdown in real Chromium against the real service and the simulator: answers and
// user messages render as Markdown with highlighted, copyable code; a streamed answer renders its
// closed blocks once; streaming equals a full render; hostile answers stay inert and send nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkipReason, browserSuite } from '../helpers/browser.ts';
import { sim } from '../helpers/server.ts';
import { idle, sendInNewChat } from './ui.ts';

const skip = browserSkipReason();
const BODY = '.msg.assistant .body';

const ANSWER = [
  '## Tide pools',
  '',
  'They hold **anemones** and `crabs`; see [the guide](https://example.org/guide).',
  '',
  '- sea stars',
  '- snails',
  '',
  '| animal | zone |',
  '| --- | --- |',
  '| mussel | high |',
  '',
  '```ts',
  'const count: number = 3;',
  'function grow(n: number) { return n + 1; }',
  '```',
  '',
  'The end.',
].join('\n');

describe('web client: Markdown', { skip: skip ?? false }, () => {
  const web = browserSuite({ permissions: ['clipboard-read', 'clipboard-write'] });

  it('renders headings, lists, tables, links and highlighted code with a copy button; the user message too', async () => {
    await web.page.goto(`${web.server.url}/`);
    // Every <h2> the answer gets while it streams: the closed heading block must be put in place once.
    await web.page.evaluate(`(() => {
      window.__committedHeadings = 0;
      new MutationObserver((records) => {
        for (const r of records) for (const n of r.addedNodes) {
          if (n.nodeName === 'H2' && n.parentElement?.matches('.msg.assistant[aria-busy] .body')) window.__committedHeadings++;
        }
      }).observe(document.getElementById('main'), { subtree: true, childList: true });
    })()`);
    await sendInNewChat(web.page, web.server.url, sim({ reply: ANSWER, rate: 40 }, 'Tell me about **tide pools**'));
    await idle(web.page);
    assert.equal(await web.page.evaluate('window.__committedHeadings'), 1, 'the closed heading was rendered once while streaming');

    await web.page.locator(`${BODY} pre code.hljs`).waitFor();
    assert.equal(await web.page.textContent(`${BODY} h2`), 'Tide pools');
    assert.equal(await web.page.textContent(`${BODY} strong`), 'anemones');
    assert.deepEqual(await web.page.locator(`${BODY} ul li`).allTextContents(), ['sea stars', 'snails']);
    assert.deepEqual(await web.page.locator(`${BODY} table td`).allTextContents(), ['mussel', 'high']);
    const link = web.page.locator(`${BODY} a`);
    assert.equal(await link.getAttribute('href'), 'https://example.org/guide');
    assert.equal(await link.getAttribute('target'), '_blank');
    assert.match((await link.getAttribute('rel'))!, /noopener/);
    assert.ok(await web.page.locator(`${BODY} pre code.language-ts .hljs-keyword`).count() >= 2, 'keywords highlighted');
    assert.equal(await web.page.textContent('.msg.user .body strong'), 'tide pools');

    await web.page.click(`${BODY} .code button.copy`);
    await web.page.waitForSelector(`${BODY} .code button.copy[data-state=copied]`);
    assert.equal(await web.page.evaluate('navigator.clipboard.readText()'), 'const count: number = 3;\nfunction grow(n: number) { return n + 1; }\n');
    assert.deepEqual(web.watch.errors, []);
  });

  it('streamed in any chunking, the answer ends exactly as a full render of its text', async () => {
    await web.page.goto(`${web.server.url}/`);
    await web.page.waitForSelector('#model option', { state: 'attached' });
    const same = await web.page.evaluate(async (text) => {
      const src = [...document.scripts].find((s) => s.type === 'module')!.src;
      const md = await import(new URL('markdown.js', src).href);
      const results: boolean[] = [];
      for (const size of [1, 3, 7, 40]) {
        const whole = document.createElement('div');
        md.renderMarkdown(whole, text);
        const streamed = document.createElement('div');
        const stream = md.markdownStream(streamed);
        for (let i = 0; i < text.length; i += size) {
          stream.append(text.slice(i, i + size));
          // Let a frame render now and then, so blocks are committed part way.
          if ((i / size) % 5 === 0) await new Promise(requestAnimationFrame);
        }
        stream.finish(text);
        streamed.querySelector('.open-block')?.remove();
        results.push(streamed.innerHTML === whole.innerHTML);
      }
      return results;
    }, ANSWER);
    assert.deepEqual(same, [true, true, true, true]);
  });

  it('keeps hostile answers inert: nothing runs, no dialog opens, no request leaves', async () => {
    const hostile = [
      '<script>window.__pwned = "script"</script>',
      '<img src="x" onerror="window.__pwned = \'onerror\'">',
      '<img src="http://127.0.0.1:9/track.png" alt="tracker">',
      '![remote](http://127.0.0.1:9/pic.png)',
      '[js](javascript:window.__pwned=%22js-link%22) <a href="javascript:alert(1)">raw js link</a>',
      '[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) <a href="data:text/html,<script>alert(2)</script>">raw data link</a>',
      '<svg onload="window.__pwned = \'svg\'"><script>window.__pwned = "svg-script"</script><image href="http://127.0.0.1:9/svg.png"/></svg>',
      '<!-- <img src=x onerror="window.__pwned = \'comment\'"> -->',
      '<iframe src="http://127.0.0.1:9/frame"></iframe><object data="http://127.0.0.1:9/obj"></object>',
      '<style>body { background: url(http://127.0.0.1:9/bg.png) }</style>',
      '<details open ontoggle="window.__pwned = \'ontoggle\'"><summary>s</summary>x</details>',
      '<form action="http://127.0.0.1:9/"><button formaction="javascript:alert(3)">go</button></form>',
      '<video src="http://127.0.0.1:9/v.mp4" autoplay></video><audio src="http://127.0.0.1:9/a.mp3" autoplay></audio>',
      '<a href="http://127.0.0.1:9/ping" ping="http://127.0.0.1:9/ping2">plain link</a>',
      'HOSTILE-END',
      // Last: an unclosed <style> in MathML swallows the rest of the text.
      '<math><mtext><table><mglyph><style><img src=x onerror="window.__pwned = \'mxss\'">',
    ].join('\n\n');
    const dialogs: string[] = [];
    const elsewhere: string[] = [];
    web.page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    web.page.on('request', (r) => {
      if (!r.url().startsWith(web.server.url + '/') || /\/x$/.test(r.url())) elsewhere.push(r.url());
    });
    await sendInNewChat(web.page, web.server.url, sim({ reply: hostile }, `same in my own message:\n\n${hostile}`));
    await idle(web.page);
    await web.page.waitForFunction(() => document.querySelector('.msg.assistant .body')?.textContent?.includes('HOSTILE-END'));
    // The links that lost their href go nowhere when clicked.
    const dead = web.page.locator('.msg.assistant .body a:not([href])');
    assert.ok((await dead.count()) >= 4, 'javascript: and data: links are kept as text');
    for (const a of await dead.all()) await a.click();
    // An image error queued now is handled: the errors of the answer's images, queued earlier, were too.
    // (Inline handlers could not run under the page's CSP anyway; the sanitizer must not leave them,
    // and a CSP refusal would show up in web.watch.errors.)
    await web.page.evaluate(`(() => { const i = new Image(); i.onerror = () => { window.__control = 1; }; i.src = 'data:,'; })()`);
    await web.page.waitForFunction(() => (window as unknown as { __control?: number }).__control === 1);

    assert.equal(await web.page.evaluate('window.__pwned'), undefined);
    assert.deepEqual(dialogs, []);
    assert.deepEqual(elsewhere, []);
    for (const sel of ['script', 'svg', 'math', 'iframe', 'object', 'style', 'form', 'video', 'audio', '[onerror]', '[onload]', '[ontoggle]', '[ping]', 'img[src]']) {
      assert.equal(await web.page.locator(`.msg .body ${sel}`).count(), 0, `no ${sel} in a message`);
    }
    for (const href of await web.page.locator('.msg .body a[href]').evaluateAll((as) => as.map((a) => a.getAttribute('href')))) {
      assert.match(href!, /^https?:/, `only web links keep an href: ${href}`);
    }
    assert.ok(await web.page.locator('.msg.assistant .body details').count() === 1, 'harmless HTML is kept');
    // Chromium reports an inline handler or <style> to the page's CSP as soon as the sanitizer's inert
    // document parses it, before the sanitizer drops it: those reports are expected; anything else is not.
    assert.deepEqual(web.watch.errors.filter((e) => !/^console: (Executing inline event handler|Applying inline style) violates/.test(e)), []);
  });

  it("keeps an answer's markup from posing as the page's own elements (ids, data attributes)", async () => {
    // The page finds its templates by id and its tool cards by data-tool-call-id: an answer that
    // names them must not take their place (the next view or tool card would break).
    const reply = [
      '<div id="chat-tpl">fake chat</div> <p id="search-tpl">fake search</p>',
      '<ul><li data-tool-call-id="call_1">fake card</li></ul>',
      'CLOBBER-END',
    ].join('\n\n');
    web.watch.errors.length = 0; // the hostile answer above was reported to the CSP on purpose
    await sendInNewChat(web.page, web.server.url, sim({ reply }, 'names of the page'));
    await idle(web.page);
    await web.page.waitForFunction(() => document.querySelector('.msg.assistant .body')?.textContent?.includes('CLOBBER-END'));
    // The other views still open from this one.
    await web.page.click('a[href="#new-search"]');
    await web.page.waitForSelector('.view.search');
    await web.page.goBack();
    await web.page.waitForSelector('.view.chat .msg.assistant');
    await web.page.click('a[href="#new-chat"]');
    await web.page.waitForFunction(() => document.querySelector('.view.chat .title')?.textContent === 'New chat');
    await web.page.goBack();
    await web.page.waitForSelector('.view.chat .msg.assistant');
    assert.equal(await web.page.locator('.msg .body [id], .msg .body [data-tool-call-id]').count(), 0, 'no page ids or hooks in a message');
    assert.deepEqual(web.watch.errors, []);
  });
});
