// Issue 36's rows of `make bench`, on one service in token mode with users:
//  - noisy neighbour: 20 users each keep streams running and start new ones (the `others` job), alone and
//    then while one more user offers starts at twice the instance's capacity. Pass: the noisy user meets
//    its own 429, the others' added p99 with it stays within 2× of theirs without it, none of their starts
//    refused. Shedding is on (the service's defaults: SHEDDING_DEFAULTS), as in a deployment.
//  - start-rate with a user's key beside the admin token, same service: CPU per start, within 3 %.
// Knobs (env): BENCH_NOISY=0 (off)  BENCH_NOISY_USERS=20  BENCH_NOISY_STARTS=500 (the noisy user's starts/s:
//   twice the overload row's 250/s at capacity)  BENCH_NOISY_OTHERS_STARTS=40 (the others' starts/s, all users)
//   BENCH_NOISY_SECONDS=8  BENCH_NOISY_STEP=80:20 (deltas:rate of every stream)  BENCH_NOISY_START_RATE=250
//   BENCH_NOISY_START_RATE_S=4
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { SHEDDING_DEFAULTS } from './overload.ts';
import { ccBody, serviceBody } from './bodies.ts';
import type { DriveContext } from './drive.ts';
import type { GenJob, GenResult } from './gen.ts';
import { generate, measure, r2, toRow, type Base, type Row } from './measure.ts';

const env = process.env;
const num = (name: string, fallback: number) => Number(env[name] ?? fallback);
const ADMIN = 'bench-admin-token';
const GEN = path.join(import.meta.dirname, 'gen.ts');

/** A second generator process, so the noisy user's starts and the others' streams run at once. */
async function generateAside(job: GenJob): Promise<GenResult> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', GEN, JSON.stringify(job)], { maxBuffer: 1 << 24 });
  return (JSON.parse(stdout.trim().split('\n').at(-1)!) as { result: GenResult }).result;
}

/** Refusals in a generator's reasons, by status (`http 429 …` → 429). */
export function refusedBy(reasons: Record<string, number>, status: number): number {
  return Object.entries(reasons).filter(([r]) => r.startsWith(`http ${status} `)).reduce((n, [, v]) => n + v, 0);
}

async function createUser(port: number, name: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await fetch(`http://127.0.0.1:${port}/v1/users`, {
    method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, ...extra }),
  });
  const body = (await r.json()) as { apiKey?: string; message?: string };
  if (r.status !== 201 || !body.apiKey) throw new Error(`POST /v1/users ${r.status}: ${body.message}`);
  return body.apiKey;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

export async function runNoisyNeighbour(c: DriveContext, run: (base: Base, go: () => Promise<Row>) => Promise<Row | undefined>): Promise<Record<string, unknown>> {
  const users = num('BENCH_NOISY_USERS', 20);
  const noisyStarts = num('BENCH_NOISY_STARTS', 500);
  const othersStarts = num('BENCH_NOISY_OTHERS_STARTS', 40);
  const seconds = num('BENCH_NOISY_SECONDS', 8);
  const [deltas, rate] = (env.BENCH_NOISY_STEP ?? '80:20').split(':').map(Number) as [number, number];
  const startRate = num('BENCH_NOISY_START_RATE', 250);
  const k = othersStarts * seconds;
  const ccPath = new URL(c.sim.urls.provider_c).pathname + '/chat/completions';
  const floor = await generate({ mode: 'streams', host: '127.0.0.1', port: c.sim.port, path: ccPath, headers: bearer('k'), body: ccBody(deltas, rate), kind: 'cc', k, deltas, rate, startsPerSec: othersStarts });
  const serviceEnv = { ADMIN_TOKEN: ADMIN, ...SHEDDING_DEFAULTS };
  const noisy = await c.withService(c.sim.urls, c.dbUrl, 100_000, async (svc) => {
    const others = await Promise.all(Array.from({ length: users }, (_, i) => createUser(svc.port, `neighbour ${i}`)));
    const noisyKey = await createUser(svc.port, 'noisy');
    const othersJob: GenJob = {
      mode: 'streams', host: '127.0.0.1', port: svc.port, path: '/v1/chat-completions/stream', headersByIndex: others.map(bearer),
      body: serviceBody('provider_c', true, deltas, rate), kind: 'sse', k, deltas, rate, startsPerSec: othersStarts,
    };
    await generate({ ...othersJob, k: Math.min(k, 200) }); // warm-up: the JIT, the users' keys in the cache
    const alone = await generate(othersJob);
    // The noisy user's offer lasts as long as the others keep starting.
    const [beside, flood] = await Promise.all([
      generate(othersJob),
      generateAside({ ...othersJob, headersByIndex: undefined, headers: bearer(noisyKey), k: noisyStarts * seconds, startsPerSec: noisyStarts }),
    ]);
    const added = (g: GenResult) => (g.latencyMs.p99 === null || floor.latencyMs.p99 === null ? null : r2(g.latencyMs.p99 - floor.latencyMs.p99));
    const figures = (g: GenResult) => ({ ok: g.ok, failed: g.failed, refused429: refusedBy(g.reasons, 429), refused503: refusedBy(g.reasons, 503), addedP99Ms: added(g), latencyP99Ms: g.latencyMs.p99, reasons: g.reasons });
    const a = figures(alone);
    const b = figures(beside);
    return {
      job: { users, othersStartsPerSec: othersStarts, noisyStartsPerSec: noisyStarts, seconds, deltas, rate, othersStreams: k },
      floorP99Ms: floor.latencyMs.p99,
      othersAlone: a,
      othersBesideNoisy: b,
      noisy: { offered: flood.streams, accepted: flood.ok, refused429: refusedBy(flood.reasons, 429), refused503: refusedBy(flood.reasons, 503), reasons: flood.reasons },
      pass: {
        noisyMeetsItsOwnLimit: refusedBy(flood.reasons, 429) > 0,
        othersAddedP99Within2x: a.addedP99Ms !== null && b.addedP99Ms !== null && b.addedP99Ms <= 2 * Math.max(a.addedP99Ms, 1),
        othersNoneRefused: b.refused429 + b.refused503 === 0 && b.failed === 0,
      },
    };
  }, undefined, serviceEnv);
  // The start-rate pair: one-delta starts through the admin token and through a user's key on one service.
  const startK = Math.max(1, Math.round(startRate * num('BENCH_NOISY_START_RATE_S', 4)));
  const perStart: Record<string, number | null> = {};
  await c.withService(c.sim.urls, c.dbUrl, startK * 2 + 1000, async (svc) => {
    const userKey = await createUser(svc.port, 'starts', { maxActiveRuns: 1_000_000 });
    for (const [variant, token] of [['admin-token', ADMIN], ['user-key', userKey]] as const) {
      const base: Base = { target: 'service', provider: 'provider_c', persist: true, k: startK, rate: startRate, scenario: 'start-rate', variant };
      const job: GenJob = {
        mode: 'streams', host: '127.0.0.1', port: svc.port, path: '/v1/chat-completions/stream', headers: bearer(token),
        body: serviceBody('provider_c', true, 1, 1), kind: 'sse', k: startK, deltas: 1, rate: 1, startsPerSec: startRate,
      };
      const row = await run(base, async () => toRow(base, await measure(svc.pid, c.sim.child.pid, job, c.pgMeter), undefined, `token mode (ADMIN_TOKEN); the bearer is ${variant === 'admin-token' ? 'the admin token' : 'a user’s API key'}; same service as its pair`));
      perStart[variant] = row?.cpuUsPerStart ?? null;
    }
  }, undefined, { ADMIN_TOKEN: ADMIN });
  const [admin, user] = [perStart['admin-token'], perStart['user-key']];
  const ratio = admin && user ? r2(user / admin) : null;
  return { ...noisy, startRate: { startsPerSec: startRate, k: startK, cpuUsPerStart: perStart, userOverAdmin: ratio, pass: ratio !== null && ratio <= 1.03 } };
}
