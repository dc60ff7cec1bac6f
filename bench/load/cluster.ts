// The cluster rows of `make bench`: two service instances in cluster mode (one Postgres, one Redis
// of our own) behind nginx balancing round-robin with no stickiness, against one process on the
// same job in the same run.
//  - single / cluster: K persisted streams, nobody re-attaching; CPU per delta of the service (both
//    instances summed) — the cost of cluster mode when no frame needs to cross instances.
//  - cluster-reattach: every client drops mid-stream and re-attaches through nginx (about half land
//    on the other instance, which follows the owner's run over Redis); each must end with the full text.
// Knobs (env): BENCH_CLUSTER=0 skips it; BENCH_CLUSTER_K=1000; BENCH_REDIS_URL uses that Redis
// instead of starting `redis-server` (keys under a prefix of this run, deleted at the end).
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import type { Row } from './measure.ts';
import type { GenJob, GenResult } from './gen.ts';
import { cpuMicros, rssKb, start, type Child } from '../../test/helpers/procs.ts';
import { freePort, startNginx, startService, type SimUrls } from './targets.ts';

export interface ClusterContext {
  sim: SimUrls;
  dbUrl: string | null;
  nginxBin: string | null;
  D: number;
  RATE: number;
  STARTS: number;
  rows: Row[];
  log(msg: string): void;
  generate(job: GenJob): Promise<GenResult>;
  serviceBody(provider: string, persist: boolean, deltas: number, rate: number): string;
}

const env = process.env;
/** The cluster row's pass mark: CPU per delta in cluster mode within 15 % of one process. */
const CPU_TARGET = 1.15;

interface Measured {
  result: GenResult;
  cpuUs: number;
  rssKbPerStream: number;
}

/** Warm-up, then the job, with the CPU and RSS of every service process around it. */
async function measure(c: ClusterContext, pids: number[], job: GenJob): Promise<Measured> {
  await c.generate({ ...job, k: Math.min(job.k, 200), deltas: 20, rate: 100, dropAfter: undefined });
  const sum = (f: (pid: number) => number) => pids.reduce((n, p) => n + f(p), 0);
  const idle = sum(rssKb);
  const cpu0 = sum(cpuMicros);
  const result = await c.generate(job);
  return { result, cpuUs: sum(cpuMicros) - cpu0, rssKbPerStream: (sum(rssKb) - idle) / job.k };
}

const perDelta = (m: Measured): number | null => (m.result.deltas ? Number((m.cpuUs / m.result.deltas).toFixed(2)) : null);

function row(c: ClusterContext, k: number, scenario: string, m: Measured | { result: GenResult; cpuUs: null; rssKbPerStream: null }, note: string): Row {
  const g = m.result;
  const r2 = (v: number | null) => (v === null || !Number.isFinite(v) ? null : Number(v.toFixed(2)));
  return {
    target: 'service', provider: 'provider_c', persist: true, k, rate: c.RATE, scenario: 'stream', variant: scenario,
    ttfdP50Ms: g.ttfdMs.p50, ttfdP99Ms: g.ttfdMs.p99, addedP50Ms: null, addedP99Ms: null,
    cpuUsPerDelta: m.cpuUs === null ? null : perDelta(m),
    rssKbPerStream: r2(m.rssKbPerStream),
    streams: g.streams, failed: g.failed, lost: g.lost, duplicated: g.duplicated,
    latencyP50Ms: g.latencyMs.p50, latencyP99Ms: g.latencyMs.p99, deltas: g.deltas, seconds: g.seconds, note,
    ...(Object.keys(g.reasons).length ? { reasons: g.reasons } : {}),
  };
}

/** A Redis for the cluster: BENCH_REDIS_URL, else our own redis-server (its CPU is then reported too). */
async function startRedis(): Promise<{ url: string; child: Child | null }> {
  if (env.BENCH_REDIS_URL) return { url: env.BENCH_REDIS_URL, child: null };
  const port = await freePort();
  const { child } = await start('redis', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    ready: (l) => l.includes('Ready to accept connections'),
  });
  return { url: `redis://127.0.0.1:${port}`, child };
}

async function deletePrefix(url: string, prefix: string): Promise<void> {
  const r = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await r.del(...keys);
    } while (cursor !== '0');
  } finally {
    r.disconnect();
  }
}

export async function runClusterChecks(c: ClusterContext): Promise<Record<string, unknown>> {
  if (!c.dbUrl) return { skipped: 'cluster mode needs a Postgres the instances share (no Postgres reachable)' };
  if (!c.nginxBin) return { skipped: 'nginx is not installed' };
  const K = Number(env.BENCH_CLUSTER_K ?? 1000);
  const maxRuns = String(K * 2 + 1000);
  const job = (port: number, extra: Partial<GenJob> = {}): GenJob => ({
    mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body: c.serviceBody('provider_c', true, c.D, c.RATE),
    kind: 'sse', k: K, deltas: c.D, rate: c.RATE, startsPerSec: c.STARTS, ...extra,
  });

  // One process, the same job.
  const one = await startService({ sim: c.sim, databaseUrl: c.dbUrl, maxActiveRuns: K * 2 + 1000 });
  let single: Measured;
  try {
    single = await measure(c, [one.child.pid], job(one.port));
  } finally {
    await one.child.stop();
  }
  c.rows.push(row(c, K, 'single', single, 'one process, no REDIS_URL: the baseline of the cluster rows'));

  const redis = await startRedis();
  const prefix = `bench${randomBytes(4).toString('hex')}:`;
  const instances: Child[] = [];
  try {
    const ports: number[] = [];
    for (const id of ['bench-a', 'bench-b']) {
      const svc = await startService({
        sim: c.sim, databaseUrl: c.dbUrl, maxActiveRuns: Number(maxRuns),
        env: { REDIS_URL: redis.url, REDIS_KEY_PREFIX: prefix, INSTANCE_ID: id },
      });
      instances.push(svc.child);
      ports.push(svc.port);
    }
    const lb = await startNginx(c.nginxBin, ports, K * 2, 'nginx-cluster');
    const pids = instances.map((i) => i.pid);
    const redisCpu0 = redis.child ? cpuMicros(redis.child.pid) : 0;
    const clustered = await measure(c, pids, job(lb.port));
    const redisUs = redis.child ? (cpuMicros(redis.child.pid) - redisCpu0) / Math.max(1, clustered.result.deltas) : null;
    c.rows.push(row(c, K, 'cluster', clustered, `two instances (REDIS_URL) behind nginx round-robin, no stickiness; CPU = both instances${redisUs === null ? '' : `; redis-server ${redisUs.toFixed(2)} µs/delta besides`}`));

    const dropAfter = Math.floor(c.D / 3);
    const re = await c.generate(job(lb.port, { dropAfter, reattachDelayMs: 250 }));
    c.rows.push(row(c, K, 'cluster-reattach', { result: re, cpuUs: null, rssKbPerStream: null },
      `two instances behind nginx round-robin; every stream dropped after ${dropAfter} deltas and re-attached through nginx 250 ms later (about half on the other instance); ok = reassembled text equals done.text with all ${c.D} stamps`));
    await lb.child.stop();

    const [cpuSingle, cpuCluster] = [perDelta(single), perDelta(clustered)];
    const ratio = cpuSingle && cpuCluster ? cpuCluster / cpuSingle : null;
    const out = {
      k: K,
      cpuUsPerDeltaSingle: cpuSingle,
      cpuUsPerDeltaCluster: cpuCluster,
      cpuRatio: ratio === null ? null : Number(ratio.toFixed(3)),
      cpuTarget: CPU_TARGET,
      redisCpuUsPerDelta: redisUs === null ? null : Number(redisUs.toFixed(3)),
      reattach: { ok: re.ok, failed: re.failed, lost: re.lost, duplicated: re.duplicated, reasons: re.reasons },
      pass: ratio !== null && ratio <= CPU_TARGET && re.ok === K && re.failed === 0,
    };
    c.log(`cluster K=${K}: ${JSON.stringify(out)}`);
    return out;
  } finally {
    for (const i of instances) await i.stop();
    if (redis.child) await redis.child.stop();
    else await deletePrefix(redis.url, prefix).catch((err: Error) => c.log(`could not delete the cluster's Redis keys: ${err.message}`));
  }
}
