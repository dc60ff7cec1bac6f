// The service-only checks of `make bench`, each on a fresh service: re-attach under load at every K
// (every client drops mid-stream and re-attaches; each must end with the full text), a start storm (many
// simultaneous starts per chat: exactly one run), and overload (past MAX_ACTIVE_RUNS new runs get a
// clear 503 while the admitted ones finish intact).
import type { GenJob, GenResult } from './gen.ts';
import type { Row } from './measure.ts';
import type { WithService } from './drive.ts';
import { waitForQuiet } from '../../test/helpers/procs.ts';
import type { StormResult } from './storm.ts';
import type { SimUrls } from './targets.ts';

interface Context {
  sim: SimUrls;
  dbUrl: string | null;
  STARTS: number;
  withService: WithService;
  generate(job: GenJob): Promise<GenResult>;
  serviceBody(provider: string, persist: boolean, deltas: number, rate: number): string;
}

export interface ChecksContext extends Context {
  log(msg: string): void;
  D: number;
  RATE: number;
}

const env = process.env;
const r2 = (v: number) => Number(v.toFixed(2));

/**
 * Re-attach under load at one step of the sweep: every client drops after a third of its deltas and
 * comes back 250 ms later on the attach endpoint; each must end with the full text, nothing lost or doubled.
 */
export async function reattachRow(c: Context & { step: { k: number; rate: number; deltas: number }; floor: Row | undefined }): Promise<Row> {
  const { k, rate, deltas } = c.step;
  const dropAfter = Math.floor(deltas / 3);
  const job: GenJob = {
    mode: 'streams', host: '127.0.0.1', port: 0, path: '/v1/chat-completions/stream', body: c.serviceBody('provider_c', true, deltas, rate),
    kind: 'sse', k, deltas, rate, startsPerSec: c.STARTS, dropAfter, reattachDelayMs: 250,
  };
  let loadAvg1 = 0;
  const re = await c.withService(c.sim, c.dbUrl, k * 2 + 1000, async (svc) => {
    loadAvg1 = await waitForQuiet();
    return c.generate({ ...job, port: svc.port });
  });
  const f = c.floor;
  return {
    target: 'service', provider: 'provider_c', persist: true, k, rate, scenario: 'stream', variant: 'reattach',
    ttfdP50Ms: re.ttfdMs.p50, ttfdP99Ms: re.ttfdMs.p99,
    addedP50Ms: f?.latencyP50Ms != null && re.latencyMs.p50 !== null ? r2(re.latencyMs.p50 - f.latencyP50Ms) : null,
    addedP99Ms: f?.latencyP99Ms != null && re.latencyMs.p99 !== null ? r2(re.latencyMs.p99 - f.latencyP99Ms) : null,
    cpuUsPerDelta: null, rssKbPerStream: null, streams: re.streams, failed: re.failed, lost: re.lost, duplicated: re.duplicated,
    latencyP50Ms: re.latencyMs.p50, latencyP99Ms: re.latencyMs.p99, deltas: re.deltas, seconds: re.seconds,
    note: `every stream dropped after ${dropAfter} deltas and re-attached 250 ms later; ok = reassembled text (replay + live) equals done.text with all ${deltas} stamps; latency counts live deltas only`,
    ...(Object.keys(re.reasons).length ? { reasons: re.reasons } : {}),
    loadAvg1,
  };
}

/** The start storm and overload checks (once per bench: they do not depend on K). */
export async function runChecks(c: ChecksContext): Promise<Record<string, unknown>> {
  const checks: Record<string, unknown> = {};
  const stream = (port: number, k: number, extra: Partial<GenJob> = {}): GenJob => ({
    mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body: c.serviceBody('provider_c', true, c.D, c.RATE),
    kind: 'sse', k, deltas: c.D, rate: c.RATE, startsPerSec: c.STARTS, ...extra,
  });

  // Start storm: 20 chats × 50 simultaneous starts each.
  const chats = Number(env.BENCH_STORM_CHATS ?? 20);
  const starts = Number(env.BENCH_STORM_STARTS ?? 50);
  const storm = (await c.withService(c.sim, c.dbUrl, chats * starts + 1000, (svc) =>
    c.generate({ ...stream(svc.port, 0), mode: 'storm', deltas: 20, storm: { chats, starts } }),
  )) as unknown as StormResult;
  checks.storm = { ...storm, pass: storm.chatsWithExactlyOneRun === chats && storm.conflict409 === chats * (starts - 1) };
  c.log(`storm: ${JSON.stringify(checks.storm)}`);

  // Overload: 600 streams against MAX_ACTIVE_RUNS=500 → about 100 clear 503s, the rest intact.
  const limit = Number(env.BENCH_OVERLOAD_LIMIT ?? 500);
  const over = await c.withService(c.sim, c.dbUrl, limit, (svc) =>
    c.generate({ ...stream(svc.port, limit + 100, { deltas: 40, startsPerSec: 5000 }), body: c.serviceBody('provider_c', false, 40, c.RATE) }),
  );
  const rejected = Object.entries(over.reasons).filter(([r]) => r.startsWith('http 503')).reduce((n, [, v]) => n + v, 0);
  checks.overload = {
    maxActiveRuns: limit, k: limit + 100, ok: over.ok, rejected503: rejected, otherFailures: over.failed - rejected, lost: over.lost - rejected * 40,
    duplicated: over.duplicated, reasons: over.reasons, pass: over.failed - rejected === 0 && rejected > 0 && rejected <= 100,
  };
  c.log(`overload: ${JSON.stringify(checks.overload)}`);
  return checks;
}
