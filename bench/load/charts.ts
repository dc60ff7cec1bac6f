// The bench's SVG charts: added p99 latency against K (added-p99.svg), and the cost curve (cost-curve.svg:
// CPU per delta and RSS per open stream against K for the service, nginx and the floor). Both use a
// log-scaled K axis; each point carries its value and a <title> for hovering.
import type { Row } from './measure.ts';

interface Series {
  color: string;
  label: string;
  pick: (r: Row) => boolean;
}

const isStream = (r: Row) => r.scenario === 'stream' && !r.variant;
const service = (persist: boolean) => (r: Row) => isStream(r) && r.target === 'service' && r.provider === 'provider_c' && r.persist === persist;

const LATENCY: Series[] = [
  { color: '#1f77b4', label: 'service (provider_c, persist)', pick: service(true) },
  { color: '#17becf', label: 'service (provider_c, no persist)', pick: service(false) },
  { color: '#2ca02c', label: 'nginx (relay)', pick: (r) => isStream(r) && r.target === 'nginx' },
  { color: '#d62728', label: 'peer gateway', pick: (r) => isStream(r) && r.target === 'peer' },
];

const COST: Series[] = [
  { color: '#1f77b4', label: 'service (provider_c, persist)', pick: service(true) },
  { color: '#2ca02c', label: 'nginx (relay)', pick: (r) => isStream(r) && r.target === 'nginx' },
  { color: '#7f7f7f', label: 'floor: the simulator itself', pick: (r) => isStream(r) && r.target === 'floor' },
];

interface Panel {
  x: number;
  y: number;
  w: number;
  h: number;
  title: string;
  log: boolean;
  value: (r: Row) => number | null | undefined;
  /** A dashed reference line (a target). */
  ref?: { v: number; label: string };
}

/** One chart panel: gridlines, K ticks, one polyline per series. Returns SVG elements. */
function panel(rows: Row[], series: Series[], p: Panel): string[] {
  const ks = [...new Set(rows.filter((r) => r.scenario === 'stream').map((r) => r.k))].sort((a, b) => a - b);
  const rateOf = (k: number) => rows.find((r) => r.k === k && r.scenario === 'stream')?.rate;
  const pts = series.map((s) => ({ ...s, points: ks.map((k) => ({ k, v: (() => { const r = rows.find((x) => x.k === k && s.pick(x)); return r ? (p.value(r) ?? null) : null; })() })) }));
  const vals = pts.flatMap((s) => s.points.map((q) => q.v)).filter((v): v is number => v !== null);
  const e: string[] = [];
  const L = p.x + 60, R = p.x + p.w - 10, T = p.y + 30, B = p.y + p.h - 40;
  // Log scale: values under 1 (noise makes a relay's added latency slightly negative) sit on the 1 line.
  const top = p.log ? Math.max(2, Math.ceil(Math.log10(Math.max(100, ...vals)))) : niceTop(Math.max(p.ref?.v ?? 0, ...vals, 1));
  const lx = (k: number) => (ks.length < 2 ? L : L + ((Math.log10(k) - Math.log10(ks[0]!)) / (Math.log10(ks.at(-1)!) - Math.log10(ks[0]!))) * (R - L));
  const ly = (v: number) => (p.log ? T + (1 - Math.log10(Math.max(1, v)) / top) * (B - T) : T + (1 - Math.max(0, v) / top) * (B - T));
  e.push(`<text x="${p.x + 10}" y="${p.y + 16}" font-size="13" font-weight="bold">${p.title}</text>`);
  const ticks = p.log ? Array.from({ length: top + 1 }, (_, i) => 10 ** i) : Array.from({ length: 6 }, (_, i) => (top * i) / 5);
  for (const v of ticks) {
    e.push(`<line x1="${L}" x2="${R}" y1="${ly(v)}" y2="${ly(v)}" stroke="#ddd"/><text x="${L - 6}" y="${ly(v) + 4}" text-anchor="end">${v.toLocaleString('en-US')}</text>`);
  }
  if (p.ref) e.push(`<line x1="${L}" x2="${R}" y1="${ly(p.ref.v)}" y2="${ly(p.ref.v)}" stroke="#999" stroke-dasharray="4 3"/><text x="${R - 4}" y="${ly(p.ref.v) - 4}" text-anchor="end" fill="#666">${p.ref.label}</text>`);
  for (const k of ks) e.push(`<text x="${lx(k)}" y="${B + 16}" text-anchor="middle">${k.toLocaleString('en-US')} (${rateOf(k)}/s)</text>`);
  e.push(`<text x="${(L + R) / 2}" y="${B + 34}" text-anchor="middle">K open streams (deltas/s per stream), log scale</text>`);
  for (const s of pts) {
    const ok = s.points.filter((q) => q.v !== null) as { k: number; v: number }[];
    if (ok.length > 1) e.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${ok.map((q) => `${lx(q.k)},${ly(q.v)}`).join(' ')}"/>`);
    for (const q of ok) {
      e.push(`<circle cx="${lx(q.k)}" cy="${ly(q.v)}" r="3.5" fill="${s.color}"><title>${s.label} K=${q.k}: ${q.v}</title></circle>`);
      e.push(`<text x="${lx(q.k) + 6}" y="${ly(q.v) - 5}" fill="${s.color}" font-size="10">${q.v < 10 ? q.v.toFixed(1) : Math.round(q.v)}</text>`);
    }
  }
  return e;
}

function niceTop(v: number): number {
  const mag = 10 ** Math.floor(Math.log10(v));
  return [1, 2, 2.5, 5, 10].map((m) => m * mag).find((t) => t >= v)!;
}

function legend(series: Series[], x: number, y: number): string[] {
  return series.flatMap((s, i) => [
    `<rect x="${x}" y="${y + i * 20 - 9}" width="12" height="12" fill="${s.color}"/>`,
    `<text x="${x + 17}" y="${y + i * 20 + 1}">${s.label}</text>`,
  ]);
}

const svg = (w: number, h: number, body: string[]) =>
  [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" font-family="sans-serif" font-size="12">`, `<rect width="${w}" height="${h}" fill="white"/>`, ...body, '</svg>'].join('\n') + '\n';

export function latencyChart(rows: Row[]): string {
  return svg(720, 400, [
    ...panel(rows, LATENCY, {
      x: 10, y: 6, w: 460, h: 390, log: true, title: 'Added p99 latency per delta over the floor (ms, log)',
      value: (r) => r.addedP99Ms, ref: { v: 25, label: 'target at K=1,000: 25 ms' },
    }),
    ...legend(LATENCY, 490, 50),
  ]);
}

/** CPU per delivered delta and RSS per open stream against K. The floor is the simulator's own cost. */
export function costChart(rows: Row[]): string {
  return svg(1110, 420, [
    ...panel(rows, COST, {
      x: 0, y: 40, w: 420, h: 370, log: false, title: 'CPU per delivered delta (µs)',
      value: (r) => (r.target === 'floor' ? r.simCpuUsPerDelta : r.cpuUsPerDelta),
    }),
    ...panel(rows, COST, {
      x: 420, y: 40, w: 420, h: 370, log: false, title: 'RSS per open stream (KB)',
      value: (r) => (r.target === 'floor' ? r.simRssKbPerStream : r.rssKbPerStream), ref: { v: 40, label: 'target at K=5,000: 40 KB' },
    }),
    '<text x="10" y="20" font-size="14" font-weight="bold">Cost curve: what one more delta and one more open stream cost, against K</text>',
    ...legend(COST, 860, 90),
  ]);
}
