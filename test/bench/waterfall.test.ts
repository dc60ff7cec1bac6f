// The waterfall renderer (bench/waterfall/render.ts) that draws docs/trace-waterfall.svg: given spans in any
// order, each is drawn once with its name, in parent order (a span, then its children by start), its bar
// placed on the shared time axis, and a link marked with a line to the span it links to.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { waterfallOrder, waterfallSvg, type WaterfallSpan } from '../../bench/waterfall/render.ts';

const span = (spanId: string, parentSpanId: string, name: string, startMs: number, endMs: number, o: Partial<WaterfallSpan> = {}): WaterfallSpan => ({
  traceId: 't1', spanId, parentSpanId, name, kind: 1, startMs, endMs, service: 'css', thread: 'main', links: [], ...o,
});

// Shuffled on purpose: the request last, a late child before an early one, the attach (another trace) first.
const spans: WaterfallSpan[] = [
  span('e', '', 'POST /v1/chats/:chatId/stream/attach', 1400, 1900, { traceId: 't2', kind: 2, links: [{ traceId: 't1', spanId: 'b', attributes: { 'link.kind': 'attach' } }] }),
  span('d', 'b', 'execute_tool web_search', 1200, 1300, { thread: 'actor 2' }),
  span('c', 'b', 'chat m', 1010, 1150, { kind: 3, thread: 'actor 2', note: 'round 1' }),
  span('b', 'a', 'chat m', 1005, 2000, { note: 'the run' }),
  span('a', '', 'POST /v1/chat-completions/stream', 1000, 1990, { kind: 2 }),
];

const drawnIds = (svg: string) => [...svg.matchAll(/data-span-id="([^"]+)"/g)].map((m) => m[1]);
const bar = (svg: string, id: string) => {
  const m = new RegExp(`data-span-id="${id}"[\\s\\S]*?class="bar" x="([\\d.]+)"[^>]*width="([\\d.]+)"`).exec(svg)!;
  return { x: Number(m[1]), width: Number(m[2]) };
};
const barX = (svg: string, id: string) => bar(svg, id).x;

test('spans are drawn in parent order, children by start, with depth', () => {
  assert.deepEqual(waterfallOrder(spans).map((r) => [r.span.spanId, r.depth]), [['a', 0], ['b', 1], ['c', 2], ['d', 2], ['e', 0]]);
});

test("the SVG holds each span's name once, its bar in parent order and at its start offset", () => {
  const svg = waterfallSvg(spans, 'a title & more');
  assert.deepEqual(drawnIds(svg), ['a', 'b', 'c', 'd', 'e']);
  const labels = [...svg.matchAll(/xml:space="preserve">([^<]*)</g)].map((m) => m[1]!.trim());
  assert.deepEqual(labels, ['POST /v1/chat-completions/stream', '└ chat m  (the run)', '└ chat m  (round 1)', '└ execute_tool web_search', 'POST /v1/chats/:chatId/stream/attach']);
  assert.ok(svg.includes('a title &amp; more'), 'text is escaped');
  assert.ok(svg.includes('css · actor 2'), 'the thread that made a span');
  // Starts on one axis: the request at its left edge, the tool after the first provider call.
  assert.ok(barX(svg, 'a') < barX(svg, 'b') && barX(svg, 'b') < barX(svg, 'c') && barX(svg, 'c') < barX(svg, 'd') && barX(svg, 'e') < barX(svg, 'd') + 200);
  // One linear axis for every trace: a bar starts at its span's offset from the earliest start and is as
  // long as the span lasts, on the scale the attach's offset (400 ms) sets; within 0.3 px, as the SVG
  // rounds to 0.1 px (the order check above held with bars placed by row, or on a bent axis).
  const pxPerMs = (barX(svg, 'e') - barX(svg, 'a')) / 400;
  for (const s of spans) {
    assert.ok(Math.abs(barX(svg, s.spanId) - barX(svg, 'a') - (s.startMs - 1000) * pxPerMs) <= 0.3, `${s.spanId}'s bar at its start offset`);
    assert.ok(Math.abs(bar(svg, s.spanId).width - (s.endMs - s.startMs) * pxPerMs) <= 0.3, `${s.spanId}'s bar as long as it lasts`);
  }
  assert.ok(svg.includes('990 ms') && svg.includes('100 ms'), 'durations');
});

test('a link is marked, with a line to the linked span when it is drawn', () => {
  const svg = waterfallSvg(spans, 'links');
  const attach = svg.slice(svg.indexOf('data-span-id="e"'));
  assert.match(attach, /class="link"[^>]*>⤴ attach</);
  assert.match(attach, /<line class="link"/);
  const alone = waterfallSvg(spans.filter((s) => s.traceId === 't2'), 'the attach alone');
  assert.match(alone, /⤴ attach/);
  assert.doesNotMatch(alone, /<line class="link"/);
});
