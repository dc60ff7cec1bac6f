// A trace drawn as a waterfall, as an SVG: one line per span in parent order (a span, then its children by
// start time, indented), with its name, the service and thread that made it, a bar from its start offset
// to its end on a shared time axis, and its duration. A span that links to another (an attach to the run it
// follows, a takeover to the lost run) is marked, with a dashed line to the linked span when it is drawn too.
// Plain string building: the picture in docs/operations.md comes from bench/waterfall/main.ts.

export interface WaterfallSpan {
  traceId: string;
  spanId: string;
  /** '' (or a span not drawn): a root. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  startMs: number;
  endMs: number;
  /** Who made it: the service and its thread (`main`, `actor 1`, …). */
  service: string;
  thread?: string;
  /** What the span says about itself, shown after its name (e.g. `round 1`, `tool_calls`). */
  note?: string;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
}

const KIND = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const COLOUR: Record<string, string> = { server: '#4e79a7', internal: '#f28e2b', client: '#59a14f' };
const ROW = 24;
const LABEL_W = 380;
const WHO_W = 290;
const BAR_W = 520;
const PAD = 12;
const HEAD = 44;

/** The spans in drawing order (roots by start, then depth-first, children by start) with their depth. */
export function waterfallOrder(spans: WaterfallSpan[]): { span: WaterfallSpan; depth: number }[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string, WaterfallSpan[]>();
  const roots: WaterfallSpan[] = [];
  for (const s of spans) {
    if (s.parentSpanId && ids.has(s.parentSpanId)) children.set(s.parentSpanId, [...(children.get(s.parentSpanId) ?? []), s]);
    else roots.push(s);
  }
  const byStart = (a: WaterfallSpan, b: WaterfallSpan) => a.startMs - b.startMs || a.endMs - b.endMs;
  const out: { span: WaterfallSpan; depth: number }[] = [];
  const visit = (s: WaterfallSpan, depth: number) => {
    out.push({ span: s, depth });
    for (const c of (children.get(s.spanId) ?? []).sort(byStart)) visit(c, depth + 1);
  };
  for (const r of roots.sort(byStart)) visit(r, 0);
  return out;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const ms = (v: number): string => (v >= 100 || v === 0 ? v.toFixed(0) : v.toFixed(1));

/** A tick step giving about six ticks over `span` ms: 1, 2 or 5 × a power of ten. */
function tickStep(span: number): number {
  const raw = Math.max(span, 1) / 6;
  const p = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw)!;
}

/** The SVG of `spans` (one trace, or several: an attach's beside the run it links to); `title` heads it. */
export function waterfallSvg(spans: WaterfallSpan[], title: string): string {
  const rows = waterfallOrder(spans);
  const t0 = Math.min(...spans.map((s) => s.startMs));
  const t1 = Math.max(...spans.map((s) => s.endMs));
  const total = Math.max(t1 - t0, 1);
  const x0 = PAD + LABEL_W + WHO_W;
  const x = (t: number) => x0 + ((t - t0) / total) * BAR_W;
  const width = x0 + BAR_W + 90;
  const height = HEAD + rows.length * ROW + 40;
  const yOf = new Map(rows.map((r, i) => [r.span.spanId, HEAD + i * ROW]));
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="monospace" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    `<text x="${PAD}" y="18" font-size="14" font-weight="bold">${esc(title)}</text>`,
    `<text x="${PAD}" y="36" fill="#555">span</text><text x="${PAD + LABEL_W}" y="36" fill="#555">service · thread</text>`,
  ];
  const step = tickStep(total);
  for (let t = 0; t <= total; t += step) {
    out.push(`<line x1="${x(t0 + t).toFixed(1)}" y1="${HEAD - 4}" x2="${x(t0 + t).toFixed(1)}" y2="${height - 28}" stroke="#e4e4e4"/>`,
      `<text x="${x(t0 + t).toFixed(1)}" y="${height - 14}" text-anchor="middle" fill="#555">${ms(t)} ms</text>`);
  }
  rows.forEach(({ span: s, depth }, i) => {
    const y = HEAD + i * ROW;
    const kind = KIND[s.kind] ?? 'unspecified';
    const name = `${'  '.repeat(depth)}${depth > 0 ? '└ ' : ''}${s.name}${s.note ? `  (${s.note})` : ''}`;
    const bx = x(s.startMs);
    const bw = Math.max(x(s.endMs) - bx, 1.5);
    if (i % 2 === 1) out.push(`<rect x="0" y="${y}" width="${width}" height="${ROW}" fill="#f7f7f7"/>`);
    out.push(
      `<g class="span" data-span-id="${esc(s.spanId)}" data-parent-id="${esc(s.parentSpanId)}">`,
      `<text x="${PAD}" y="${y + 16}" xml:space="preserve">${esc(name)}</text>`,
      `<text x="${PAD + LABEL_W}" y="${y + 16}" fill="#555">${esc(s.thread ? `${s.service} · ${s.thread}` : s.service)}</text>`,
      `<rect class="bar" x="${bx.toFixed(1)}" y="${y + 5}" width="${bw.toFixed(1)}" height="${ROW - 10}" rx="2" fill="${COLOUR[kind] ?? '#9c755f'}"><title>${esc(`${s.name}: ${kind}, ${ms(s.startMs - t0)} – ${ms(s.endMs - t0)} ms`)}</title></rect>`,
      `<text x="${(bx + bw + 4).toFixed(1)}" y="${y + 16}" fill="#333">${ms(s.endMs - s.startMs)} ms</text>`,
    );
    for (const l of s.links) {
      const to = yOf.get(l.spanId);
      const what = String(l.attributes['link.kind'] ?? 'link');
      out.push(`<text class="link" x="${(bx - 4).toFixed(1)}" y="${y + 16}" text-anchor="end" fill="#b07aa1">⤴ ${esc(what)}</text>`);
      if (to !== undefined) out.push(`<line class="link" x1="${bx.toFixed(1)}" y1="${y + 5}" x2="${bx.toFixed(1)}" y2="${to + ROW - 5}" stroke="#b07aa1" stroke-dasharray="4 3"/>`);
    }
    out.push('</g>');
  });
  const legend = Object.entries(COLOUR).map(([k, c], i) => `<rect x="${x0 + i * 110}" y="22" width="10" height="10" fill="${c}"/><text x="${x0 + i * 110 + 14}" y="31" fill="#555">${k.toUpperCase()}</text>`);
  out.push(...legend, `<text x="${x0 + 330}" y="31" fill="#b07aa1">⤴ link</text>`, '</svg>', '');
  return out.join('\n');
}
