// The web client's chat view in real Chromium against a real server and the simulator: a streamed
// answer appears piece by piece, a reload mid-stream re-attaches and ends with the stored text, and
// a tool call's card goes from running to done, attachments reach the provider, Stop keeps the
// partial answer, a failed run says why, a run that ends before the attach shows its stored answer,
// a message the server refuses goes back to the composer, and a chat another tab went on with is sent
// as stored.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { browserSkipReason, browserSuite, recordedTexts, recordTexts } from '../helpers/browser.ts';
import { sim, waitFor } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const skip = browserSkipReason();
const ANSWER = '.msg.assistant .body';

describe('web client: chat', { skip: skip ?? false }, () => {
  const web = browserSuite();

  /** Opens a new chat on provider_c and sends `text` (and `files`); returns once the message is sent. */
  async function send(text: string, files: Array<{ name: string; mimeType: string; buffer: Buffer }> = []): Promise<void> {
    await web.page.goto(`${web.server.url}/#new-chat`);
    await web.page.locator('#model option[value="provider_c:sim-c-large"]').waitFor({ state: 'attached' });
    await web.page.selectOption('#model', 'provider_c:sim-c-large');
    await web.page.fill('textarea[name=text]', text);
    if (files.length > 0) await web.page.setInputFiles('input[name=files]', files);
    await web.page.keyboard.press('Enter');
  }

  const idle = () => web.page.waitForFunction(() => document.querySelector('.msg.assistant') && !document.querySelector('[aria-busy]'));
  const chatIdOf = () => decodeURIComponent(new URL(web.page.url()).hash.replace('#chat/', ''));
  async function storedMessage(chatId: string): Promise<{ content: string; metadata: Record<string, unknown> | null }> {
    const { body } = await web.server.call('GET', `/v1/chats/${chatId}`);
    const answers = body.chat.messages.filter((m: { role: string }) => m.role === 'assistant');
    assert.equal(answers.length, 1);
    return answers[0];
  }
  const storedAnswer = async (chatId: string) => (await storedMessage(chatId)).content;
  /** A first answer in this tab, then a second tab open on the same chat, idle: the other tab of a test. */
  async function secondTab() {
    await send(sim({ reply: 'first answer' }, 'first question'));
    await idle();
    const other = await web.browser.newPage();
    try {
      await other.goto(`${web.server.url}/#chat/${encodeURIComponent(chatIdOf())}`);
      await other.waitForSelector('.msg.assistant');
      await other.waitForFunction(() => !document.querySelector('[aria-busy]'));
      return other;
    } catch (err) {
      await other.close();
      throw err;
    }
  }

  it('shows a streamed answer token by token, then the stored text', async () => {
    const reply = 'Tide pools hold anemones, crabs, sea stars, snails and small fish between the tides, ' +
      'and at low water they are easy to see from the rocks.';
    await web.page.goto(`${web.server.url}/`);
    await recordTexts(web.page, ANSWER);
    // Stepped through four gates (after every 6 of its 30 deltas): at each the page must have shown
    // more of the answer before the next part is let go. provider_c has tools, so its first text may be
    // held back briefly while the round could still turn into tool calls; the wait covers that.
    const gate = gateName();
    await send(sim({ reply, deltas: 30, gate, gateEvery: 6 }));
    let shown = 0;
    for (let k = 1; k <= 4; k++) {
      await waitFor(() => web.server.sim.heldAt(`${gate}-${k}`) === 1, 10_000, `the answer to hold at its gate ${k}`);
      const grown = await web.page.waitForFunction(
        ([sel, n]) => {
          const all = document.querySelectorAll(sel as string);
          const len = all.length ? (all[all.length - 1]!.textContent ?? '').length : 0;
          return len > (n as number) ? len : false;
        },
        [ANSWER, shown] as const,
      );
      shown = (await grown.jsonValue()) as number;
      web.server.sim.openGate(`${gate}-${k}`);
    }
    await idle();
    const texts = (await recordedTexts(web.page)).filter((t) => t.length > 0);
    assert.equal(texts.at(-1), reply);
    const partial = texts.filter((t) => t !== reply);
    assert.ok(partial.length >= 4, `expected several intermediate states, saw ${JSON.stringify(partial)}`);
    for (let i = 1; i < partial.length; i++) assert.ok(partial[i]!.startsWith(partial[i - 1]!), 'each state extends the previous one');
    for (const t of partial) assert.ok(reply.startsWith(t), `intermediate state ${JSON.stringify(t)} is a prefix of the answer`);
    assert.equal(await storedAnswer(chatIdOf()), reply);
    assert.match(web.page.url(), /#chat\//);
    assert.equal(await web.page.isVisible('.stop'), false, 'no stop button once the run is over');
    assert.equal(await web.page.isEnabled('button[name=send]'), true);
    assert.deepEqual(web.watch.errors, []);
  });

  it('re-attaches after a reload mid-stream and ends with the full stored text', async () => {
    // Held after half its deltas until the page has re-attached, so the run cannot end before.
    const gate = gateName();
    await send(sim({ deltas: 40, rate: 8, gate, gateAfter: 20 }, 'count slowly'));
    await web.page.waitForFunction((sel) => (document.querySelector(sel)?.textContent ?? '').length > 10, ANSWER);
    const chatId = chatIdOf();
    const before = (await web.page.textContent(ANSWER))!;
    await web.page.reload();
    // Live again: the answer is streaming after the reload, and starts with what was shown before it.
    await web.page.waitForSelector('.msg.assistant[aria-busy=true]');
    const replayed = (await web.page.textContent(ANSWER))!;
    assert.ok(replayed.startsWith(before), `after the reload ${JSON.stringify(replayed)} continues ${JSON.stringify(before)}`);
    web.server.sim.openGate(gate);
    await idle();
    const stored = await storedAnswer(chatId);
    assert.ok(stored.length > replayed.length);
    assert.equal(await web.page.textContent(ANSWER), stored);
    assert.deepEqual(web.watch.errors, []);
  });

  it('shows a tool call as a card that goes from running to done', async () => {
    await web.page.goto(`${web.server.url}/`);
    await recordTexts(web.page, '.tool .tool-status');
    // The engine's answer to the tool's search is held until the card shows the running state.
    const gate = gateName();
    const query = `tide pools SIM ${JSON.stringify({ searchGate: gate })}`;
    await send(sim({ tools: [{ name: 'web_search', args: { query } }], reply: 'Found them.' }, 'look it up'));
    await web.page.waitForFunction(() => document.querySelector('.tool .tool-status')?.textContent === 'running');
    web.server.sim.openGate(gate);
    await idle();
    const states = (await recordedTexts(web.page)).filter((t) => t.length > 0);
    assert.equal(states[0], 'running');
    assert.match(states.at(-1)!, /^done · \d+ ms$/);
    assert.equal(await web.page.locator('.tool').count(), 1, 'one card per toolCallId');
    assert.equal(await web.page.getAttribute('.tool', 'data-status'), 'completed');
    assert.equal(await web.page.textContent('.tool .tool-name'), 'web_search');
    assert.equal(await web.page.textContent(ANSWER), 'Found them.');
    assert.deepEqual(web.watch.errors, []);
  });

  it('sends an image and a text file as attachments, forwarded to the provider and stored', async () => {
    const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
    await send(sim({ echoInput: true }, 'what is in these?'), [
      { name: 'dot.png', mimeType: 'image/png', buffer: png },
      { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('PERIWINKLE notes') },
    ]);
    await idle();
    // The simulator answers with what the provider received: the text, the image, the text file.
    const echoed = JSON.parse((await web.page.textContent(ANSWER))!);
    assert.deepEqual(echoed.parts.filter((p: string) => p === 'image_url'), ['image_url']);
    assert.equal(echoed.attachments[0].mediaType, 'image/png');
    assert.ok(echoed.parts.filter((p: string) => p === 'text').length >= 2, JSON.stringify(echoed));
    const { body } = await web.server.call('GET', `/v1/chats/${chatIdOf()}`);
    const user = body.chat.messages.find((m: { role: string }) => m.role === 'user');
    const attachments = user.metadata.attachments;
    assert.deepEqual(attachments.map((a: { kind: string; filename: string }) => [a.kind, a.filename]), [['image', 'dot.png'], ['text', 'notes.txt']]);
    assert.equal(attachments[1].text, 'PERIWINKLE notes');
    // Shown from the stored message: the image as a picture, the text file by name.
    assert.equal(await web.page.getAttribute('.msg.user .attachments img', 'alt'), 'dot.png');
    assert.match((await web.page.textContent('.msg.user .attachments'))!, /notes\.txt/);
    assert.deepEqual(web.watch.errors, []);
  });

  it('stop keeps the partial answer, stored and shown as stopped', async () => {
    // Held after 40 of its 600 deltas at a gate nobody opens: only Stop can end it.
    const reply = Array.from({ length: 600 }, (_, i) => `word${i + 1}`).join(' ');
    await send(sim({ reply, deltas: 600, rate: 10, gate: gateName(), gateAfter: 40 }, 'count to six hundred'));
    await web.page.waitForFunction((sel) => (document.querySelector(sel)?.textContent ?? '').length > 10, ANSWER);
    const chatId = chatIdOf();
    await web.page.click('.stop');
    await web.page.waitForSelector('.msg.assistant .note');
    await idle();
    const stored = await storedMessage(chatId);
    assert.equal(stored.metadata?.stopped, true);
    assert.ok(stored.content.length > 10, 'the text shown before Stop is kept');
    // Stopped after a second or two, far from the whole answer.
    assert.ok(reply.startsWith(stored.content) && stored.content.length < reply.length, `a prefix: ${JSON.stringify(stored.content)}`);
    assert.equal(await web.page.textContent(ANSWER), stored.content);
    assert.equal(await web.page.textContent('.msg.assistant .note'), 'stopped');
    assert.equal(await web.page.isVisible('.stop'), false);
    const { body } = await web.server.call('GET', '/v1/active-runs');
    assert.equal(body.chats.includes(chatId), false, 'nothing left running');
    const last = (await web.server.call('GET', `/v1/chats/${chatId}`)).body.chat.lastRun;
    assert.equal(last.status, 'stopped');
    assert.deepEqual(web.watch.errors, []);
  });

  it('shows why the last answer failed, live and when the chat is opened again', async () => {
    await send(sim({ reply: 'one two three four five six', deltas: 6, failAfter: 2 }, 'break halfway'));
    await web.page.waitForSelector('.view.chat .status.error');
    await web.page.waitForFunction(() => !document.querySelector('[aria-busy]') && /#chat\//.test(location.hash));
    const live = (await web.page.textContent('.view.chat .status'))!;
    assert.ok(live.length > 0);
    const { body } = await web.server.call('GET', `/v1/chats/${chatIdOf()}`);
    assert.equal(body.chat.lastRun.status, 'failed');
    await web.page.reload();
    await web.page.waitForSelector('.view.chat .msg.user');
    await web.page.waitForSelector('.view.chat .status.error');
    assert.equal(await web.page.textContent('.view.chat .status'), body.chat.lastRun.error);
    web.watch.errors.length = 0; // the provider's failure is this test's point
  });

  it('opened just as its run ends, shows the stored answer (the attach finds nothing running)', async () => {
    const gate = gateName();
    await send(sim({ reply: 'the end of a race between a reload and a run', deltas: 10, gate, gateAfter: 4 }, 'race me'));
    await web.page.waitForFunction((sel) => (document.querySelector(sel)?.textContent ?? '').length > 0, ANSWER);
    const chatId = chatIdOf();
    // The page reads the chat while the run is held, then asks to attach only once the run is over.
    await web.page.route('**/stream/attach', async (route) => {
      web.server.sim.openGate(gate);
      await waitFor(async () => (await web.server.call('GET', '/v1/active-runs')).body.chats.includes(chatId) === false, 10_000, 'the run to end');
      await route.continue();
    });
    try {
      await web.page.reload();
      await web.page.waitForFunction((sel) => document.querySelector(sel)?.textContent === 'the end of a race between a reload and a run', ANSWER);
    } finally {
      await web.page.unroute('**/stream/attach');
    }
    assert.deepEqual(web.watch.errors, []);
  });

  it('a message the server refuses to start (another tab is answering in the chat) goes back to the composer', async () => {
    const other = await secondTab();
    try {
      // This tab starts a run that is held, so the chat is busy when the other tab sends.
      const gate = gateName();
      await web.page.fill('textarea[name=text]', sim({ reply: 'second answer', gate }, 'second question'));
      await web.page.keyboard.press('Enter');
      await waitFor(() => web.server.sim.heldAt(gate) === 1, 10_000, 'the run to be held');
      await other.fill('textarea[name=text]', 'a long question typed with care');
      await other.keyboard.press('Enter');
      await other.waitForSelector('.view.chat .status.error');
      await other.waitForFunction(() => !document.querySelector('[aria-busy]') && !(document.querySelector('button[name=send]') as HTMLButtonElement).disabled);
      assert.equal(await other.inputValue('textarea[name=text]'), 'a long question typed with care', 'the text is kept to send again');
      const shown = await other.locator('.msg.user .body').allTextContents();
      assert.equal(shown.filter((t) => t.includes('typed with care')).length, 0, `not shown as sent: ${JSON.stringify(shown)}`);
      web.server.sim.openGate(gate);
      await idle();
    } finally {
      await other.close();
    }
  });

  it('a chat another tab moved on sends the whole stored conversation with the next message', async () => {
    const other = await secondTab();
    try {
      // This tab goes on with the chat while the other one sits there.
      await web.page.fill('textarea[name=text]', sim({ reply: 'TURN-OF-THE-FIRST-TAB answered' }, 'TURN-OF-THE-FIRST-TAB'));
      await web.page.keyboard.press('Enter');
      await web.page.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 2 && !document.querySelector('[aria-busy]'));
      web.server.sim.clearRequests();
      await other.fill('textarea[name=text]', sim({ reply: 'third answer' }, 'third question'));
      await other.keyboard.press('Enter');
      await other.waitForFunction(() => document.querySelectorAll('.msg.assistant').length === 3 && !document.querySelector('[aria-busy]'));
      const calls = web.server.sim.requests.filter((r) => r.upstream === 'provider_c' && r.path.endsWith('/chat/completions'));
      assert.equal(calls.length, 1);
      const contents = JSON.stringify(calls[0]!.body.messages);
      assert.ok(contents.includes('TURN-OF-THE-FIRST-TAB answered'), `the model saw the other tab's turn: ${contents}`);
    } finally {
      await other.close();
    }
  });
});
