// The service-only checks of `make bench`, each on a fresh service: re-attach under load (every
// client drops mid-stream and re-attaches; each must end with the full text), a start storm (many
// simultaneous starts per chat: exactly one run), and overload (past MAX_ACTIVE_RUNS new runs get a
// clear 503 while the admitted ones finish intact).
import type { GenJob, GenResult } from './gen.ts';
import type { Row, withService as WithService } from './bench.ts';
import type { StormResult } from './storm.ts';
import type { SimUrls } from './targets.ts';

export interface ChecksContext {
  sim: SimUrls;
  dbUrl: string | null;
  D: number;
  RATE: number;
  STARTS: number;
  rows: Row[];
  log(msg: string): void;
  withService: typeof WithService;
  generate(job: GenJob): Promise<GenResult>;
  serviceBody(provider: string, persist: boolean, deltas: number, rate: number): string;
}

const env = process.env;

export async function runChecks(c: ChecksContext): Promise<Record<string, unknown>> {
  const checks: Record<string, unknown> = {};
  const K = Number(env.BENCH_REATTACH_K ?? 1000);
  const stream = (port: number, k: number, extra: Partial<GenJob> = {}): GenJob => ({
    mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body: c.serviceBody('provider_c', true, c.D, c.RATE),
    kind: 'sse', k, deltas: c.D, rate: c.RATE, startsPerSec: c.STARTS, ...extra,
  });

  // Re-attach: drop after a third of the deltas, come back 250 ms later on the attach endpoint.
  const dropAfter = Math.floor(c.D / 3);
  const re = await c.withService(c.sim, c.dbUrl, K * 2 + 1000, (svc) => c.generate(stream(svc.port, K, { dropAfter, reattachDelayMs: 250 })));
  const prior = c.rows.find((r) => r.target === 'floor' && r.k === K);
  c.rows.push({
    target: 'service', provider: 'provider_c', persist: true, k: K, rate: c.RATE, scenario: 'reattach',
    ttfdP50Ms: re.ttfdMs.p50, ttfdP99Ms: re.ttfdMs.p99,
    addedP50Ms: prior?.latencyP50Ms != null && re.latencyMs.p50 !== null ? Number((re.latencyMs.p50 - prior.latencyP50Ms).toFixed(2)) : null,
    addedP99Ms: prior?.latencyP99Ms != null && re.latencyMs.p99 !== null ? Number((re.latencyMs.p99 - prior.latencyP99Ms).toFixed(2)) : null,
    cpuUsPerDelta: null, rssKbPerStream: null, streams: re.streams, failed: re.failed, lost: re.lost, duplicated: re.duplicated,
    latencyP50Ms: re.latencyMs.p50, latencyP99Ms: re.latencyMs.p99, deltas: re.deltas, seconds: re.seconds,
    note: `every stream dropped after ${dropAfter} deltas and re-attached 250 ms later; ok = reassembled text (replay + live) equals done.text with all ${c.D} stamps; latency counts live deltas only`,
    ...(Object.keys(re.reasons).length ? { reasons: re.reasons } : {}),
  });
  checks.reattach = { k: K, ok: re.ok, failed: re.failed, lost: re.lost, duplicated: re.duplicated, reasons: re.reasons };
  c.log(`reattach K=${K}: ok ${re.ok}, failed ${re.failed}, lost ${re.lost}, dup ${re.duplicated} ${JSON.stringify(re.reasons)}`);

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
