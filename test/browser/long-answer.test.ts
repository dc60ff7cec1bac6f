// A 2,000-delta Markdown answer in real Chromium, held at a gate after each quarter: the page renders
// it incrementally (a render per frame, not per delta), ends with the stored text, and PRINTS its scripting time per delta (measured
// by Chromium's own counters; speed is printed, never asserted).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { browserSkipReason, browserSuite } from '../helpers/browser.ts';
import { sim, waitFor } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';
import { chatIdOf, idle, sendInNewChat } from './ui.ts';

const skip = browserSkipReason();
const DELTAS = 2000;
const RATE = 400;
/** Deltas between the stream's holds (simulator gates). */
const STEP = DELTAS / 4;

/** About 24,000 characters of headings, paragraphs, lists and code: ~12 characters per delta. */
function longAnswer(): string {
  const sections: string[] = [];
  for (let i = 1; sections.join('\n\n').length < DELTAS * 12; i++) {
    sections.push(
      `### Part ${i}`,
      `Tide pool number ${i} holds anemones, crabs and **sea stars**; at low water the rocks show \`${i}\` kinds of snail and a few small fish.`,
      `- mussels on the high rocks (${i})\n- barnacles lower down\n- kelp at the edge`,
      '```js\n' + `const pool${i} = { depth: ${i}, life: ['crab', 'snail'] };\nconsole.log(pool${i}.life.length);\n` + '```',
    );
  }
  return sections.join('\n\n');
}

async function metrics(page: Page, cdp: { send(m: 'Performance.getMetrics'): Promise<{ metrics: { name: string; value: number }[] }> }) {
  const { metrics: list } = await cdp.send('Performance.getMetrics');
  const get = (name: string) => list.find((m) => m.name === name)?.value ?? 0;
  return { script: get('ScriptDuration'), layout: get('LayoutDuration') + get('RecalcStyleDuration'), task: get('TaskDuration') };
}

describe('web client: a long streamed answer', { skip: skip ?? false }, () => {
  const web = browserSuite();

  it(`streams ${DELTAS} deltas, rendering once per frame, and ends with the stored text`, async () => {
    const reply = longAnswer();
    await web.page.goto(`${web.server.url}/`);
    await web.page.waitForSelector('#model option', { state: 'attached' });
    // Renders of the open block while the answer streams, and the page's long tasks.
    await web.page.evaluate(`(() => {
      window.__renders = 0;
      window.__longTasks = 0;
      new PerformanceObserver((list) => { window.__longTasks += list.getEntries().length; }).observe({ type: 'longtask' });
      new MutationObserver((records) => {
        for (const r of records) if (r.target.matches?.('.msg.assistant[aria-busy] .open-block')) { window.__renders++; break; }
      }).observe(document.getElementById('main'), { subtree: true, childList: true });
    })()`);
    const cdp = await web.page.context().newCDPSession(web.page);
    await cdp.send('Performance.enable');
    const start = await metrics(web.page, cdp);
    const began = performance.now();
    // Held after each quarter until the page has rendered the open block again, so it renders while
    // the answer streams whatever the machine's speed; the rate only shapes the printed measure.
    const gate = gateName();
    await sendInNewChat(web.page, web.server.url, sim({ reply, deltas: DELTAS, rate: RATE, gate, gateEvery: STEP }, 'a long one'));
    let rendered = 0;
    for (let k = 1; k * STEP < DELTAS; k++) {
      await waitFor(() => web.server.sim.heldAt(`${gate}-${k}`) === 1, 30_000, `the answer to hold at its gate ${k}`);
      const more = await web.page.waitForFunction((n) => ((window as unknown as { __renders: number }).__renders > n ? (window as unknown as { __renders: number }).__renders : false), rendered);
      rendered = (await more.jsonValue()) as number;
      web.server.sim.openGate(`${gate}-${k}`);
    }
    await idle(web.page);
    const seconds = (performance.now() - began) / 1000;
    const end = await metrics(web.page, cdp);

    const { body } = await web.server.call('GET', `/v1/chats/${chatIdOf(web.page)}`);
    const stored = body.chat.messages.find((m: { role: string }) => m.role === 'assistant').content;
    assert.equal(stored, reply);
    await web.page.waitForFunction((n) => document.querySelectorAll('.msg.assistant .body h3').length === n, reply.match(/^### /gm)!.length);
    const renders = (await web.page.evaluate('window.__renders')) as number;
    assert.ok(renders > 1, `rendered while streaming (${renders} renders)`);
    assert.ok(renders < DELTAS / 2, `renders are batched per frame, not one per delta (${renders} for ${DELTAS} deltas)`);

    const perDelta = (s: number) => ((s * 1000) / DELTAS).toFixed(3);
    console.log(
      `long answer: ${DELTAS} deltas (${reply.length} chars) at ${RATE}/s in ${seconds.toFixed(1)} s; ${renders} renders; ` +
        `page scripting ${perDelta(end.script - start.script)} ms/delta, style+layout ${perDelta(end.layout - start.layout)} ms/delta, ` +
        `all tasks ${perDelta(end.task - start.task)} ms/delta; long tasks (>50 ms): ${await web.page.evaluate('window.__longTasks')}`,
    );
    assert.deepEqual(web.watch.errors, []);
  });
});
