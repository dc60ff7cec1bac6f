// Issue 50's façade row: the CPU per delta of the OpenAI-compatible API's streams against the native
// stream's, at one K in the same run, each on a fresh service: `/openai/v1/responses` (stored, its default:
// a chat per response) against the native stream persisted, and `/openai/v1/chat/completions` (not stored,
// its default) against the native stream not persisted. Native and façade alternate per pair, so a drift of
// the machine over the run falls on both. Goal: each within 1.15 × its native row.
// Alone: BENCH_ONLY=openai make bench (quick: BENCH_OPENAI_STEP=50:20:40).
// Knobs (env): BENCH_OPENAI=0 (off)  BENCH_OPENAI_STEP=1000:20:120 (K:deltas per second:deltas)
//   BENCH_OPENAI_STARTS=1000 (starts per second)
import type { DriveContext } from './drive.ts';
import type { GenJob } from './gen.ts';
import { serviceBody } from './bodies.ts';
import type { Base } from './measure.ts';
import { cpuRatio, measureRun, type RunRow } from './ab.ts';

const [K, RATE, DELTAS] = (process.env.BENCH_OPENAI_STEP ?? '1000:20:120').split(':').map(Number) as [number, number, number];
const STARTS = Number(process.env.BENCH_OPENAI_STARTS ?? 1000);
/** The bound on the façade's CPU per delta over the native stream's. */
export const OPENAI_BOUND = 1.15;
const MODEL = 'provider_c/m';

const ask = () => `load __I__\nSIM ${JSON.stringify({ deltas: DELTAS, rate: RATE, stamp: true })}`;
const responsesBody = () => JSON.stringify({ model: MODEL, stream: true, input: ask() });
const chatBody = () => JSON.stringify({ model: MODEL, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: ask() }] });

interface Pair {
  /** The façade's variant, its path, body and stream kind; and whether the native row it is read against persists. */
  variant: string;
  path: string;
  body: string;
  kind: GenJob['kind'];
  persist: boolean;
  note: string;
}

const PAIRS: Pair[] = [
  { variant: 'openai-responses', path: '/openai/v1/responses', body: responsesBody(), kind: 'responses', persist: true, note: 'POST /openai/v1/responses, stream: true, stored (the default): against the native stream persisted' },
  { variant: 'openai-chat', path: '/openai/v1/chat/completions', body: chatBody(), kind: 'cc', persist: false, note: 'POST /openai/v1/chat/completions, stream: true with the usage chunk, not stored (the default): against the native stream not persisted' },
];

/** The rows (per pair: the native stream, then the façade's) and the check's summary. */
export async function runOpenaiRow(c: DriveContext, run: RunRow): Promise<Record<string, unknown>> {
  const step = { k: K, deltas: DELTAS, rate: RATE, startsPerSec: STARTS };
  const summary: Record<string, unknown> = { step: { k: K, rate: RATE, deltas: DELTAS, startsPerSec: STARTS }, bound: OPENAI_BOUND };
  for (const p of PAIRS) {
    const base = (variant: string): Base => ({ target: 'service', provider: 'provider_c', persist: p.persist, k: K, rate: RATE, scenario: 'stream', variant });
    const native = await measureRun(c, run, step, base(`${p.variant}-native`), {
      path: '/v1/chat-completions/stream', body: serviceBody('provider_c', p.persist, DELTAS, RATE), kind: 'sse', note: `the native stream beside ${p.variant} (persist: ${p.persist})`,
    });
    const facade = await measureRun(c, run, step, base(p.variant), p);
    const r = cpuRatio(facade, native);
    summary[p.variant] = {
      cpuUsPerDelta: facade?.cpuUsPerDelta ?? null, nativeCpuUsPerDelta: native?.cpuUsPerDelta ?? null, ratio: r,
      failed: (facade?.failed ?? 0) + (native?.failed ?? 0), pass: r !== null && r <= OPENAI_BOUND && facade?.failed === 0 && native?.failed === 0,
    };
  }
  return summary;
}
