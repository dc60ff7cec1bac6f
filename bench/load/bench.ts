// `make bench`: the load test. Starts the simulator, nginx and the peer gateway in front of it, and
// a fresh service per measured run, then for each K drives K concurrent stamped streams through
// every target with the generator (its own process) and writes bench/results.{json,md} and
// bench/added-p99.svg. Everything is on 127.0.0.1, bounded in count and time, and stops by itself.
//
// Knobs (env): BENCH_SWEEP=100:20:120,1000:20:120,5000:4:40,10000:2:40 (K:rate:deltas)  BENCH_STARTS_PER_SEC=1000
//   BENCH_TARGETS=floor,nginx,peer,service  BENCH_CASES=provider_c:true,...  BENCH_BIG_K_CASES  BENCH_HUGE_K_CASES
//   BENCH_PEER_MAX_K=5000  BENCH_EXTRAS=provider_b,web_search,embedded,tls (BENCH_EXTRAS_K=1000, BENCH_EMBEDDED_K=100,
//   BENCH_TLS_K=1000,5000)
//   BENCH_START_RATES=100,250,500 (start-rate.ts)  BENCH_CAPACITY=0 and BENCH_CAPACITY_* (capacity.ts)
//   BENCH_BURST=1000 (start-burst K; 0 = off)  BENCH_CHECKS=0  BENCH_REATTACH=0
//   BENCH_CLUSTER=0 BENCH_CLUSTER_K=1000 BENCH_REDIS_URL (the cluster rows: bench/load/cluster.ts)
//   BENCH_OVERLOAD=0 BENCH_ROLLING=0 (the overload-shedding and rolling-restart rows, and their knobs: bench/load/overload.ts)
//   BENCH_FLOOD=0 (issue 38's start flood over running streams, and its knobs: bench/load/flood.ts)
//   BENCH_QUIET_LOAD=1 BENCH_QUIET_WAIT_S=120 (wait before each run for the 1-minute load average to fall below it)
//   BENCH_PROFILE=1 (service under --cpu-prof; results go to
//   bench/out/ instead of bench/)  BENCH_RESULTS_DIR  BENCH_BUDGET_S=3600 (runs left after this are skipped, with a note)
//   BENCH_SERVICE_FLAGS="--max-semi-space-size=4" (Node and V8 flags for the service, for A/B runs)
//   BENCH_DEFAULT_PATH=0 BENCH_NOISY=0 BENCH_CHECKPOINTS=0 BENCH_KILL=0 (issues 36–38's checks, each in its own file;
//   BENCH_ONLY=defaultPath,noisyNeighbour,checkpoints,killRecovery,flood,brownout,overloadShedding,capacity runs only those named, nothing else)
//   Issue 48's rows: BENCH_BURSTS=0 BENCH_LONG=0 (burst.ts, long-answer.ts), BENCH_ONLY names burst, longAnswer, startRate
//   (the start-rate rows alone, with the `nginx + SQL` baseline: start-rate.ts); BENCH_PIN=0 (capacity unpinned: pin.ts)
//   BENCH_BROWNOUT=0 (issue 51's brownout row: bench/load/brownout.ts)
//   BENCH_OPENAI=0 (issue 50's façade row, BENCH_ONLY=openai alone: bench/load/openai.ts)
//   BENCH_TRACING=0 (issue 52's tracing row, BENCH_ONLY=tracing alone: bench/load/tracing.ts)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { GenJob, GenResult } from './gen.ts';
import { ccBody, serviceBody } from './bodies.ts';
import { failedRow, generate, measure, steadyP99, toRow, type Base, type Row } from './measure.ts';
import { driveOnce, h2cEnv } from './drive.ts';
import { costChart, latencyChart } from './charts.ts';
import { knobs, mergeResults } from './merge.ts';
import { markdown } from './report.ts';
import { childByName, openFilesLimit, sleep, stopAll, type Child } from '../../test/helpers/procs.ts';
import { CAPACITY, CAPACITY_MAX, capacityBound, capacityPinning, capacityRatio, runCapacity } from './capacity.ts';
import { runClusterChecks } from './cluster.ts';
import { runHistorySearchBench } from './history-search.ts';
import { pgCpuMeter } from './pg-cpu.ts';
import { runStartRates, START_RATES } from './start-rate.ts';
import { startBaselineSummary } from './start-baseline.ts';
import { runFloodCheck } from './flood.ts';
import { runBurstRow } from './burst.ts';
import { runLongAnswerRow } from './long-answer.ts';
import { runOverloadCheck, runRollingCheck } from './overload.ts';
import { runCheckpoints } from './checkpoints.ts';
import { runDefaultPath } from './default-path.ts';
import { runKillCheck } from './kill-recovery.ts';
import { runBrownoutCheck } from './brownout.ts';
import { runNoisyNeighbour } from './noisy.ts';
import { runOpenaiRow } from './openai.ts';
import { runTracingRow } from './tracing.ts';
import { reattachRow, runChecks } from './scenarios.ts';
import { createBenchDb, ensureNginx, OUT, peerHeaders, startNginx, startPeer, startSecureSimulator, startService, startSimulator, type SimUrls } from './targets.ts';

const env = process.env;
// BENCH_ONLY: the named checks of issues 36–38 alone (no burst, start rates, capacity, sweep or other checks);
// `capacity` there runs the capacity search alone (with its BENCH_CAPACITY_* knobs).
const ONLY = env.BENCH_ONLY ? new Set(env.BENCH_ONLY.split(',')) : null;
const ALL = ONLY === null;
const CAPACITY_RUN = ALL ? CAPACITY : ONLY.has('capacity');
const NEW_CHECKS = {
  defaultPath: 'BENCH_DEFAULT_PATH', noisyNeighbour: 'BENCH_NOISY', checkpoints: 'BENCH_CHECKPOINTS', killRecovery: 'BENCH_KILL', flood: 'BENCH_FLOOD',
  burst: 'BENCH_BURSTS', longAnswer: 'BENCH_LONG', brownout: 'BENCH_BROWNOUT', openai: 'BENCH_OPENAI', tracing: 'BENCH_TRACING',
} as const;
const wanted = (check: keyof typeof NEW_CHECKS) => (ONLY ? ONLY.has(check) : env[NEW_CHECKS[check]] !== '0');
// K:R:D per step. K=5,000 runs at 4 deltas/s (20k deltas/s in all, as K=1,000 × 20/s): at 20/s the
// floor itself (simulator + generator, nothing in between) saturates this 2-core machine near 40k
// deltas/s, so no target's added latency could be read there; the step is about 5,000 open streams.
// K=10,000 at 2/s is the same 20k deltas/s again, with twice the streams open: the cost curve's last point.
// Empty: no sweep (a targeted run of the start rows or the capacity search alone).
const SWEEP = (ALL ? env.BENCH_SWEEP ??  '100:20:120,1000:20:120,5000:4:40,10000:2:40' : '').split(',').filter(Boolean).map((s) => {
  const [k, r, d] = s.split(':').map(Number);
  return { k: k!, rate: r!, deltas: d! };
});
const KS = SWEEP.map((s) => s.k);
// 1,000 starts/s: faster ramps measure the simulator's own start-up queue (its ttfd passes 150 ms
// at 2,000/s), and K=5,000 still has every stream open at once for seconds.
const STARTS = Number(env.BENCH_STARTS_PER_SEC ?? 1000);
const START_RATE_RUN = ALL ? START_RATES.length > 0 : ONLY.has('startRate');
const TARGETS = new Set((ALL ? env.BENCH_TARGETS ?? 'floor,nginx,peer,service' : CAPACITY_RUN || START_RATE_RUN ? 'floor,nginx,service' : 'service').split(','));
const PROFILE = env.BENCH_PROFILE === '1';
const SERVICE_FLAGS = (env.BENCH_SERVICE_FLAGS ?? '').split(/\s+/).filter(Boolean);
const CASES = new Set((env.BENCH_CASES ?? 'provider_c:true,provider_c:false,provider_a:true,provider_a:false').split(','));
const CHECKS = ALL && env.BENCH_CHECKS !== '0';
// The service saturates well below K=5,000 × 20/s, so each of its runs there takes minutes' worth of
// deltas; two cases keep `make bench` under 10 minutes (BENCH_BIG_K_CASES=all for the four).
const BIG_K = 5000;
const BIG_K_CASES = env.BENCH_BIG_K_CASES === 'all' ? CASES : new Set((env.BENCH_BIG_K_CASES ?? 'provider_c:true,provider_c:false').split(','));
const HUGE_K = 10000;
const HUGE_K_CASES = new Set((env.BENCH_HUGE_K_CASES ?? 'provider_c:true').split(','));
// The peer resets connections from K=5,000 on (ECONNRESET) and each failed stream waits out its deadline.
const PEER_MAX_K = Number(env.BENCH_PEER_MAX_K ?? 5000);
// h2c: the persisted service with the provider over cleartext HTTP/2 (PROVIDER_H2C_ORIGINS) beside the
// HTTP/1.1 rows: the start burst, the sweep's TLS_KS steps, and `service-h2c` in the start-rate and capacity targets.
const EXTRAS = new Set((env.BENCH_EXTRAS ?? 'provider_b,web_search,embedded,tls,h2c').split(',').filter(Boolean));
/** The `tls` rows' K: the provider over https, HTTP/1.1 against HTTP/2 (src/providers/h2-fetch.ts). */
const TLS_KS = new Set((env.BENCH_TLS_K ?? '1000,5000').split(',').map(Number));
const EXTRAS_K = Number(env.BENCH_EXTRAS_K ?? 1000);
const EMBEDDED_K = Number(env.BENCH_EMBEDDED_K ?? 100);
const BURST_K = ALL ? Number(env.BENCH_BURST ?? 1000) : 0;
const REATTACH = env.BENCH_REATTACH !== '0';
// The start-rate sweep and the capacity search add ~15–25 minutes to the sweep's ~20.
const BUDGET_MS = Number(env.BENCH_BUDGET_S ?? 3600) * 1000;
const began = performance.now();
const PEER_NOTE = '@portkey-ai/gateway 1.15.2, its own Node server (--headless), provider openai with the simulator as custom host; '
  + 'runs with @hono/node-server 2.x (package.json override: 1.x fails every stream with TypeError: immutable); it holds the first chunk 25 ms by design';
const log = (msg: string) => console.error(`[bench ${((performance.now() - began) / 1000).toFixed(0).padStart(3)}s] ${msg}`);

/** One web_search round (the simulator's engine_a answers), then the stamped answer. */
const webSearchBody = (deltas: number, rate: number) =>
  JSON.stringify({
    provider: 'provider_c', model: 'm', persist: true, enabledTools: ['web_search'],
    messages: [{ role: 'user', content: `load __I__\nSIM ${JSON.stringify({ deltas, rate, stamp: true, tools: [{ name: 'web_search', args: { query: 'tide pools' } }] })}` }],
  });

async function main(): Promise<void> {
  const maxK = Math.max(...KS, BURST_K, CAPACITY_RUN ? CAPACITY_MAX : 0);
  const limit = openFilesLimit();
  if (limit < maxK * 2 + 1024) log(`warning: open-files limit ${limit} is low for K=${maxK} (raise with: ulimit -n $(ulimit -Hn))`);
  mkdirSync(OUT, { recursive: true });
  const rows: Row[] = [];
  const sim = await startSimulator();
  log(`simulator on ${sim.port}; sweep K:rate:deltas ${SWEEP.map((s) => `${s.k}:${s.rate}:${s.deltas}`).join(', ')}; start burst K=${BURST_K}`);
  const nginxBin = TARGETS.has('nginx') ? ensureNginx() : null;
  const nginx = nginxBin ? await startNginx(nginxBin, sim.port, maxK) : null;
  const peer = TARGETS.has('peer') ? await startPeer().catch((err: Error) => (log(`peer did not start: ${err.message}`), null)) : null;
  const peerProbe = peer ? await probePeer(peer.port, sim.urls) : 'not started';
  if (peerProbe && TARGETS.has('peer')) log(`peer gateway streaming fails: ${peerProbe}`);
  const db = await createBenchDb();
  // The Postgres backends' CPU per start beside the service's (start rows); null on the embedded database.
  const pgMeter = db.url ? await pgCpuMeter(db.url).catch((err: Error) => (log(`no Postgres CPU figures: ${err.message}`), null)) : null;
  const embeddedDir = path.join(OUT, `data-${process.pid}`);
  const maxRuns = maxK * 2 + 1000;
  type Step = (typeof SWEEP)[number];
  const svcJob = (port: number, body: string, { k, rate, deltas }: Step): GenJob => ({
    mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat-completions/stream', body, kind: 'sse', k, deltas, rate, startsPerSec: STARTS,
  });
  const overBudget = () => performance.now() - began > BUDGET_MS;
  const run = async (base: Base, go: () => Promise<Row>): Promise<Row | undefined> => {
    if (overBudget()) return void rows.push(failedRow(base, `skipped: the bench passed its ${BUDGET_MS / 1000} s budget`));
    const row = await go().catch((err: Error) => failedRow(base, `run failed: ${err.message.split('\n')[0]}`));
    rows.push(row);
    log(`${row.target.padEnd(7)} ${row.scenario}${row.variant ? `/${row.variant}` : ''} ${row.provider} persist=${row.persist} K=${row.k}: `
      + `ttfd p50 ${row.ttfdP50Ms} p99 ${row.ttfdP99Ms}, lat p50 ${row.latencyP50Ms} p99 ${row.latencyP99Ms}, added p99 ${row.addedP99Ms} (steady ${steadyP99(row)}), `
      + `cpu ${row.cpuUsPerDelta} µs/δ${row.cpuUsPerDeltaSteady != null ? ` (steady ${row.cpuUsPerDeltaSteady})` : ''}${row.cpuUsPerStart != null ? ` ${row.cpuUsPerStart} µs/start` : ''}, rss ${row.rssKbPerStream} KB/stream, `
      + `failed ${row.failed} lost ${row.lost} dup ${row.duplicated}${row.reasons ? ' ' + JSON.stringify(row.reasons) : ''} (load ${row.loadAvg1})`);
    return row;
  };
  /** floor, nginx and the peer for one step: the baselines every service row of the step is read against (drive.ts). */
  const baselines = async (step: Step, scenario: Row['scenario']): Promise<Row | undefined> => {
    const at = { ...step, startsPerSec: STARTS };
    const base = (target: Row['target']): Base => ({ target, provider: 'provider_c', persist: null, k: step.k, rate: step.rate, scenario });
    const floor = await run(base('floor'), () => driveOnce(drive, { target: 'floor' }, base('floor'), at, undefined));
    if (TARGETS.has('nginx')) await run(base('nginx'), () => driveOnce(drive, { target: 'nginx' }, base('nginx'), at, floor));
    if (TARGETS.has('peer')) {
      if (step.k > PEER_MAX_K) rows.push(failedRow(base('peer'), `not run: the peer resets connections from K=5,000 on (BENCH_PEER_MAX_K=${PEER_MAX_K})`));
      else await run(base('peer'), () => driveOnce(drive, { target: 'peer' }, base('peer'), at, floor, PEER_NOTE));
    }
    return floor;
  };
  // The `tls` rows' simulator: https, HTTP/2 or HTTP/1.1 by ALPN; the service trusts its certificate.
  const secureSim = TARGETS.has('service') && EXTRAS.has('tls') && (BURST_K > 0 || SWEEP.some((s) => TLS_KS.has(s.k))) ? await startSecureSimulator() : null;
  const h2cSim = (ALL || CAPACITY_RUN) && TARGETS.has('service') && EXTRAS.has('h2c') ? await startSimulator({ h2c: true }) : null;
  const drive = { sim, h2cSim, nginx, peer: peerProbe ? null : peer, peerDown: peerProbe, dbUrl: db.url, pgMeter, withService };
  type RunOptions = { note?: string; dataDir?: string; via?: typeof secureSim };
  const serviceRun = (base: Base, body: string, step: Step, floor: Row | undefined, o: RunOptions = {}) => {
    const upstream = o.via ?? { child: sim.child, urls: sim.urls, env: {} };
    return run(base, () =>
      withService(upstream.urls, o.dataDir ? null : db.url, maxRuns, async (svc) =>
        toRow(base, await measure(svc.pid, upstream.child.pid, svcJob(svc.port, body, step), base.persist ? pgMeter : null), floor, o.note), o.dataDir, upstream.env),
    );
  };
  /** The `tls` pair: the same persisted run with the provider over https, on HTTP/1.1 and then on HTTP/2. */
  const tlsRuns = async (base: Base, body: string, step: Step, floor: Row | undefined) => {
    for (const http2 of secureSim ? [false, true] : []) {
      await serviceRun({ ...base, variant: http2 ? 'tls-h2' : 'tls-h1' }, body, step, floor, {
        via: { ...secureSim!, env: { ...secureSim!.env, PROVIDER_HTTP2: String(http2) } },
        note: `the provider over https (the simulator with TLS), ${http2 ? 'HTTP/2: up to 100 streams per connection (PROVIDER_HTTP2, the default)' : 'HTTP/1.1: a connection per stream (PROVIDER_HTTP2=false)'}; added is over the cleartext floor`,
      });
    }
  };
  /** The `h2c` row: the same persisted run with the provider over cleartext HTTP/2, one connection for up to 100 streams. */
  const h2cRun = (base: Base, body: string, step: Step, floor: Row | undefined) =>
    h2cSim && base.persist ? serviceRun({ ...base, variant: 'h2c' }, body, step, floor, {
      via: { ...h2cSim, env: h2cEnv(h2cSim.urls) },
      note: 'the provider over cleartext HTTP/2 with prior knowledge (the simulator with SIM_H2C=1, PROVIDER_H2C_ORIGINS): up to 100 streams per connection; added is over the HTTP/1.1 floor',
    }) : Promise.resolve(undefined);
  try {
    if (BURST_K > 0) {
      // The start burst first: K streams of one delta each, started at STARTS/s: what a start costs. It is
      // short, and a bench that runs past its budget skips the sweep's last steps rather than this.
      const step = { k: BURST_K, rate: 1, deltas: 1 };
      const floor = await baselines(step, 'start-burst');
      for (const persist of TARGETS.has('service') ? [true, false] : []) {
        await serviceRun({ target: 'service', provider: 'provider_c', persist, k: BURST_K, rate: 1, scenario: 'start-burst' }, serviceBody('provider_c', persist, 1, 1), step, floor);
      }
      const persisted: Base = { target: 'service', provider: 'provider_c', persist: true, k: BURST_K, rate: 1, scenario: 'start-burst' };
      await tlsRuns(persisted, serviceBody('provider_c', true, 1, 1), step, floor);
      await h2cRun(persisted, serviceBody('provider_c', true, 1, 1), step, floor);
    }
    if (START_RATE_RUN) await runStartRates(drive, run);
    const capacityRows = CAPACITY_RUN ? await runCapacity({ ...drive, log, overBudget }) : [];
    for (const row of capacityRows) {
      rows.push(row);
      log(`capacity ${row.target}${row.variant ? ` (${row.variant})` : ''}: median ${row.capacityStreams} streams, searches ${row.capacitySearches?.join(', ')}${row.note ? ` (${row.note})` : ''}`);
    }
    for (const step of SWEEP) {
      const { k, rate, deltas } = step;
      const floor = await baselines(step, 'stream');
      if (!TARGETS.has('service')) continue;
      const cases = k >= HUGE_K ? HUGE_K_CASES : k >= BIG_K ? BIG_K_CASES : CASES;
      for (const provider of ['provider_c', 'provider_a', 'provider_b']) {
        for (const persist of [true, false]) {
          const extra = provider === 'provider_b' && persist && k === EXTRAS_K && EXTRAS.has('provider_b');
          if (!cases.has(`${provider}:${persist}`) && !extra) continue;
          const note = provider === 'provider_c' ? undefined : `${provider === 'provider_a' ? 'Responses' : 'Messages'} upstream; added is over the Chat Completions floor`;
          await serviceRun({ target: 'service', provider, persist, k, rate, scenario: 'stream' }, serviceBody(provider, persist, deltas, rate), step, floor, { note });
        }
      }
      if (k === EXTRAS_K && EXTRAS.has('web_search')) {
        await serviceRun({ target: 'service', provider: 'provider_c', persist: true, k, rate, scenario: 'stream', variant: 'web_search' }, webSearchBody(deltas, rate), step, floor, {
          note: 'one web_search round per stream (engine_a on the simulator), then the stamped answer; with a tool enabled the service holds each round\'s text up to 512 characters or 1 s to see whether it calls tools, so latency includes that hold',
        });
      }
      if (k === EMBEDDED_K && EXTRAS.has('embedded')) {
        rmSync(embeddedDir, { recursive: true, force: true });
        await serviceRun({ target: 'service', provider: 'provider_c', persist: true, k, rate, scenario: 'stream', variant: 'embedded' }, serviceBody('provider_c', true, deltas, rate), step, floor, {
          note: 'the embedded PGlite database (no DATABASE_URL: what `make run` users get), fresh DATA_DIR', dataDir: embeddedDir,
        });
        rmSync(embeddedDir, { recursive: true, force: true });
      }
      if (TLS_KS.has(k)) {
        const base: Base = { target: 'service', provider: 'provider_c', persist: true, k, rate, scenario: 'stream' };
        await tlsRuns(base, serviceBody('provider_c', true, deltas, rate), step, floor);
        await h2cRun(base, serviceBody('provider_c', true, deltas, rate), step, floor);
      }
      if (CHECKS && REATTACH && TARGETS.has('service')) {
        await run({ target: 'service', provider: 'provider_c', persist: true, k, rate, scenario: 'stream', variant: 'reattach' }, () =>
          reattachRow({ sim: sim.urls, dbUrl: db.url, step, STARTS, floor, withService, generate, serviceBody }));
      }
    }
    // Storm and overload take about a minute together: they run even past the budget.
    const checks = CHECKS && TARGETS.has('service')
      ? await runChecks({ sim: sim.urls, dbUrl: db.url, D: 120, RATE: 20, STARTS, log, withService, generate, serviceBody })
      : { skipped: 'BENCH_CHECKS=0 or service not in BENCH_TARGETS' };
    (checks as Record<string, unknown>).cluster = ALL && TARGETS.has('service') && env.BENCH_CLUSTER !== '0' && !overBudget()
      ? await runClusterChecks({ sim: sim.urls, dbUrl: db.url, nginxBin: nginxBin ?? ensureNginx(), D: 120, RATE: 20, STARTS, rows, log, generate, serviceBody })
      : { skipped: 'BENCH_CLUSTER=0, service not in BENCH_TARGETS, or over budget' };
    // History search at 100,000 messages (bench/load/history-search.ts; alone: node --import tsx bench/load/history-search.ts).
    (checks as Record<string, unknown>).historySearch = ALL && env.BENCH_HISTORY !== '0' ? await runHistorySearchBench(log) : { skipped: 'BENCH_HISTORY=0' };
    // Issue 48: the service's persisted start against nginx + SQL, per rate (start-baseline.ts).
    (checks as Record<string, unknown>).startBaseline = START_RATE_RUN ? startBaselineSummary(rows) : { skipped: 'no start-rate rows in this run' };
    const ratio = capacityRatio(capacityRows);
    (checks as Record<string, unknown>).capacity = ratio ?? { skipped: 'no capacity search of both the service and nginx in this run' };
    if (ratio) log(`capacity: service ÷ nginx ${ratio.ratio} (${ratio.pass ? 'pass' : 'miss'}: ${ratio.bound}); service ${ratio.service.median} [${ratio.service.spread.join('–')}, ± ${ratio.service.spreadPct} %], `
      + `nginx ${ratio.nginx.median} [${ratio.nginx.spread.join('–')}, ± ${ratio.nginx.spreadPct} %]${ratio.nginx.atFloorCap ? ` (nginx at the floor's cap in ${ratio.nginx.atFloorCap} searches)` : ''}`);
    const service = TARGETS.has('service') && !overBudget();
    // Issues 36–38's checks, each alone through BENCH_ONLY; they run even past the budget when named there.
    const newCheck = async (name: keyof typeof NEW_CHECKS, go: () => Promise<Record<string, unknown>>) => {
      (checks as Record<string, unknown>)[name] = wanted(name) && TARGETS.has('service') && (ONLY || !overBudget())
        ? await go().catch((err: Error) => ({ error: err.message.split('\n').slice(0, 3).join(' ') }))
        : { skipped: `${NEW_CHECKS[name]}=0, not in BENCH_ONLY, service not in BENCH_TARGETS, or over budget` };
      log(`${name}: ${JSON.stringify((checks as Record<string, unknown>)[name])}`);
    };
    await newCheck('defaultPath', () => runDefaultPath(drive, run));
    await newCheck('noisyNeighbour', () => runNoisyNeighbour(drive, run));
    await newCheck('checkpoints', () => runCheckpoints(drive, run));
    await newCheck('killRecovery', () => runKillCheck({ sim: sim.urls, dbUrl: db.url, log }));
    (checks as Record<string, unknown>).overloadShedding = (ALL ? service && env.BENCH_OVERLOAD !== '0' : ONLY.has('overloadShedding') && TARGETS.has('service'))
      ? await runOverloadCheck({ sim: sim.urls, dbUrl: db.url, log, withService, serviceBody })
      : { skipped: 'BENCH_OVERLOAD=0, service not in BENCH_TARGETS, or over budget' };
    await newCheck('flood', () => runFloodCheck({ sim: sim.urls, dbUrl: db.url, log, withService }));
    // Issue 48's rows, with the service's own defaults (burst.ts, long-answer.ts).
    await newCheck('burst', () => runBurstRow({ sim: sim.urls, dbUrl: db.url, log }));
    await newCheck('longAnswer', () => runLongAnswerRow({ sim, dbUrl: db.url, log }));
    // Issue 51: provider_c browned out, then down, with a fallback chain (bench/load/brownout.ts).
    await newCheck('brownout', () => runBrownoutCheck({ sim: sim.urls, dbUrl: db.url, log }));
    // Issue 50: the OpenAI-compatible API's streams against the native one, CPU per delta (bench/load/openai.ts).
    await newCheck('openai', () => runOpenaiRow(drive, run));
    // Issue 52: CPU per delta with tracing on and off beside the service before tracing (bench/load/tracing.ts).
    await newCheck('tracing', () => runTracingRow(drive, run));
    (checks as Record<string, unknown>).rollingRestart = ALL && service && env.BENCH_ROLLING !== '0'
      ? await runRollingCheck({ sim: sim.urls, dbUrl: db.url, log })
      : { skipped: 'BENCH_ROLLING=0, service not in BENCH_TARGETS, or over budget' };
    const meta = {
      date: new Date().toISOString(), machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
      sweep: SWEEP, startsPerSec: STARTS, burstK: BURST_K, startRates: START_RATES, capacity: CAPACITY ? capacityBound() : 'off (BENCH_CAPACITY=0)',
      pinned: CAPACITY_RUN ? `capacity search: ${capacityPinning()}` : 'nothing (no capacity search in this run)', database: db.url ? 'a scratch Postgres database (real Postgres)' : 'the embedded PGlite',
      peer: peerProbe ? `failing: ${peerProbe}` : 'ok', profile: PROFILE, commit: gitDescribe(), seconds: Math.round((performance.now() - began) / 1000),
      knobs: knobs(env),
    };
    const dir = env.BENCH_RESULTS_DIR ?? (PROFILE ? OUT : path.resolve(import.meta.dirname, '../../bench'));
    mkdirSync(dir, { recursive: true });
    // Into the committed results a run merges (nothing measured before is dropped); elsewhere it writes its own.
    const file = path.join(dir, 'results.json');
    const merge = env.BENCH_MERGE !== '0' && existsSync(file);
    const results = mergeResults(merge ? JSON.parse(readFileSync(file, 'utf8')) : null, { meta, runs: rows, checks });
    writeFileSync(file, JSON.stringify(results, null, 2) + '\n');
    writeFileSync(path.join(dir, 'results.md'), markdown(results.runs, meta, results.checks));
    // The charts draw the sweep: a run of named checks alone (BENCH_ONLY) has none, so it keeps the last ones.
    if (ALL) {
      writeFileSync(path.join(dir, 'added-p99.svg'), latencyChart(rows));
      writeFileSync(path.join(dir, 'cost-curve.svg'), costChart(rows));
    }
    log(`wrote ${path.relative(process.cwd(), dir)}/results.json, results.md, added-p99.svg, cost-curve.svg`);
  } finally {
    await pgMeter?.close().catch(() => undefined);
    await stopAll();
    rmSync(embeddedDir, { recursive: true, force: true });
    await db.drop().catch((err: Error) => log(`could not drop the bench database: ${err.message}`));
  }
}

/** A fresh service for one measured run (clean RSS baseline, no leftovers between runs). */
export async function withService<T>(sim: SimUrls, dbUrl: string | null, maxActiveRuns: number, fn: (svc: { pid: number; port: number; child: Child }) => Promise<T>, dataDir?: string, env?: Record<string, string>, root?: string): Promise<T> {
  const nodeFlags = [...SERVICE_FLAGS, ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${path.join(OUT, 'prof')}`] : [])];
  const { child, port } = await startService({ sim, databaseUrl: dbUrl, maxActiveRuns, nodeFlags, dataDir, env, root });
  try {
    return await fn({ pid: child.pid, port, child });
  } finally {
    await child.stop();
  }
}

/** One short stream through the peer; null when it works, else why not (with the gateway's own error line). */
async function probePeer(port: number, sim: SimUrls): Promise<string | null> {
  const r = await generate({
    mode: 'streams', host: '127.0.0.1', port, path: '/v1/chat/completions', headers: peerHeaders(sim), body: ccBody(3, 50),
    kind: 'cc', k: 1, deltas: 3, rate: 50, startsPerSec: 100,
  }).catch((err: Error) => ({ failed: 1, reasons: { [err.message]: 1 } }) as unknown as GenResult);
  if (r.failed === 0) return null;
  await sleep(200);
  const lines = childByName('peer')?.lines ?? [];
  const cause = lines.find((l) => /TypeError|Error:/.test(l))?.trim();
  return `${Object.keys(r.reasons)[0]}${cause ? ` — gateway log: ${cause}` : ''}`;
}

/** The tree the service ran from: the figures belong to that commit. */
function gitDescribe(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src', 'actors', 'sql'], { encoding: 'utf8' }).trim();
    return dirty ? `${head} + uncommitted changes in src/actors/sql` : head;
  } catch {
    return 'unknown';
  }
}

const onSignal = () => void stopAll().finally(() => process.exit(130));
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
main().then(
  () => process.exit(0),
  async (err) => {
    console.error(err);
    await stopAll();
    process.exit(1);
  },
);
