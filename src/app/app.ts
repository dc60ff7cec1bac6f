// Assembles the service: upstreams (real or simulated), the database, the supervisor and its actor
// hosts, and the uWS app with every route, at the server root and under /api.
import { MessageChannel } from 'node:worker_threads';
import type { Logger } from 'pino';
import { inlineHosts, workerHosts, type WorkerSetup } from '../../actors/hosts.ts';
import { LagBoard } from '../../actors/lag-report.ts';
import { errorFrames } from '../../actors/runners.ts';
import type { RunTypes } from '../../actors/runs.ts';
import { Supervisor } from '../../actors/runtime/supervisor.ts';
import { Admission } from '../admission/admission.ts';
import { Callers } from '../auth/callers.ts';
import { createJwtVerifier } from '../auth/jwt.ts';
import { ADMIN_REQUIRED } from '../http/errors.ts';
import { BodyPool } from '../http/body-pool.ts';
import { Cluster } from '../cluster/cluster.ts';
import { retiredVariablesWarning, type Config } from '../base/config.ts';
import { CpuPool } from '../base/cpu-pool.ts';
import { systemClock, type AppContext, type Clock } from '../service/context.ts';
import { openControlDb } from '../db/control-pool.ts';
import { openDatabase, redact } from '../db/pool.ts';
import type { Database } from '../db/types.ts';
import { servePool } from '../db/remote-pool.ts';
import { WriteRetryQueue } from '../db/write-retry.ts';
import { Drain } from '../service/drain.ts';
import { startHeartbeat } from '../service/heartbeat.ts';
import { corsPolicy } from '../http/cors.ts';
import { startShedding } from '../http/early-refusal.ts';
import { toHttpError } from '../http/to-http-error.ts';
import { mountRoutes, type Route } from '../http/router.ts';
import { SseStreams } from '../http/sse.ts';
import { listenExclusive, uws } from '../http/uws.ts';
import { Lifecycle } from './lifecycle.ts';
import { createLogger } from '../base/log.ts';
import { createMetrics, type Metrics } from '../service/metrics.ts';
import { createModelRegistry } from '../models/registry.ts';
import { openFilesLimit, openFilesWarning } from '../base/open-files.ts';
import { createProviders } from '../providers/index.ts';
import { closeResilience, sumStats, threadStats, type ResilienceStats } from '../providers/resilience/index.ts';
import { Readiness } from '../service/readiness.ts';
import { chatRoutes } from '../routes/chats.ts';
import { completionRoutes } from '../routes/completions.ts';
import { modelRoutes } from '../routes/models.ts';
import { openaiErrorShape } from '../openai/errors.ts';
import { ResponseEnds } from '../openai/response-ends.ts';
import { openaiRoutes } from '../openai/routes.ts';
import { recordContinuedResponse } from '../openai/run-ends.ts';
import { failInterruptedResponses } from '../openai/store.ts';
import { withOpenApiRoute } from '../routes/openapi.ts';
import { recordContinuedOutcome } from '../routes/idempotent-replay.ts';
import { searchRunRoutes } from '../routes/search-runs.ts';
import { searchRoutes } from '../routes/searches.ts';
import { systemRoutes } from '../routes/system.ts';
import { titleRoutes } from '../routes/titles.ts';
import { userRoutes } from '../routes/users.ts';
import { webRoutes } from '../routes/web.ts';
import { runDepsFrom } from '../domain/run-deps.ts';
import { ClusterRuns } from '../cluster/cluster-runs.ts';
import { LocalRuns, localRunPort, type Runs } from '../service/runs.ts';
import { ClaimedKeys } from '../service/claimed-keys.ts';
import { Takeovers } from '../service/takeover.ts';
import { markInterruptedLlmCalls, recoverRunsById } from '../store/llm-calls.ts';
import { newRecoveredRuns, type RecoveredRuns } from '../store/recovery.ts';
import { availableTools } from '../tools/registry.ts';
import { resolveUpstreams } from './upstreams.ts';
import { runLogFields } from '../telemetry/run-spans.ts';
import type { GenAiObservation } from '../telemetry/genai-metrics.ts';
import { startTracing } from '../telemetry/tracing.ts';
import { otlpMetricsConfigured, releaseOtlpMetrics, startOtlpMetrics } from '../telemetry/otlp-metrics.ts';
import { UserLimits, UserRevocations } from '../service/users.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;
/** Deadline of heartbeat and readiness queries. */
const CONTROL_DEADLINE_MS = 2000;
/** How long a stop waits for failures queued during an outage to be written. */
const STOP_WRITE_GRACE_MS = 2000;

export interface Server {
  url: string;
  port: number;
  ctx: AppContext;
  /** The router's table (the OpenAPI test checks that each one is documented). */
  routes: readonly Route[];
  /** Big request bodies, parsed in the CPU pool (tests count them). */
  bodies: BodyPool;
  close(): Promise<void>;
  /** SIGTERM: refuse new runs, let the running ones end (at most `graceMs`), then close. 0: close at once. */
  drain(graceMs: number): Promise<void>;
  /** A second signal during a drain: cut the runs still going now. */
  cut(): void;
}

export interface ServerOptions {
  log?: Logger;
  clock?: Clock;
  /** Extra routes (tests). */
  routes?: (ctx: AppContext) => Route[];
}

export async function startServer(baseConfig: Config, opts: ServerOptions = {}): Promise<Server> {
  const log = opts.log ?? createLogger(baseConfig.LOG_LEVEL);
  // A busy port fails the start now, not after the database and the actor threads are up.
  if (baseConfig.PORT !== 0) uws.us_listen_socket_close(await listenExclusive(uws.App(), baseConfig.HOST, baseConfig.PORT));
  const lifecycle = new Lifecycle((resource, err) =>
    err === undefined ? log.debug({ resource }, 'closed') : log.warn({ err, resource }, 'closing failed'),
  );
  return lifecycle.start((lc) => assemble(lc, baseConfig, log, opts));
}

/** Every start step, in order; each registers its close on `lc` as soon as it has opened something. */
async function assemble(lc: Lifecycle, baseConfig: Config, log: Logger, opts: ServerOptions): Promise<Server> {
  // OTEL_EXPORTER_OTLP_ENDPOINT set: this thread's SDK (the actor threads start their own). It is the
  // process's, not this server's (tests run two in one process): main.ts sends its last spans at exit.
  await startTracing();
  // The GenAI histograms through OTLP too, while this server runs (the last server's close sends them).
  if (otlpMetricsConfigured()) await lc.open('otlp metrics', () => startOtlpMetrics(), () => releaseOtlpMetrics());
  const upstreams = await lc.open('upstreams', () => resolveUpstreams(baseConfig), (u) => u.close());
  const config = upstreams.config;
  warnAboutConfig(config, upstreams.simulated, log);
  // The CPU-heavy work of this thread: big bodies, and fetch_url's HTML when the actors run inline.
  const cpu = await lc.open('cpu pool', () => new CpuPool(), (p) => p.close());

  const db = await lc.open(
    'database',
    () => openDatabase(config, { poolMax: 20, onIdleError: (err) => log.warn({ err }, 'idle database connection failed') }),
    (d) => d.close(),
  );
  const control = await lc.open('control database', () => openControlDb(db, config.DATABASE_URL, CONTROL_DEADLINE_MS), (c) => c.close());
  // Before its heartbeat row and its lost runs: a second process under a live instance's id must be
  // refused without having touched either (cluster.ts, awaitInstanceId).
  if (config.REDIS_URL) {
    await Cluster.awaitInstanceId({ url: config.REDIS_URL, prefix: config.REDIS_KEY_PREFIX, instanceId: config.instanceId, leaseTtlMs: config.CLUSTER_LEASE_TTL_MS });
  }
  // This server's count of runs recovered from lost instances: its start and its sweeps add, its metrics read.
  const recovered = newRecoveredRuns();
  // Set once the cluster is joined: until then the sweeper ends lost runs instead of continuing them.
  let takeovers: Takeovers | null = null;
  await lc.open(
    'heartbeat',
    () =>
      startHeartbeat({
        db: control,
        pool: db.pool,
        instanceId: config.instanceId,
        intervalMs: config.INSTANCE_HEARTBEAT_MS,
        log,
        recovered,
        takeover: () => takeovers?.policy() ?? null,
      }),
    (h) => h.stop(),
  );
  const interrupted = await markInterruptedLlmCalls(db.pool, { instanceId: config.instanceId, tally: recovered });
  if (interrupted > 0) log.warn({ interrupted }, 'marked LlmCalls interrupted by the last stop as failed');
  const responses = await failInterruptedResponses(db.pool, config.instanceId);
  if (responses > 0) log.warn({ responses }, 'marked OpenAI responses interrupted by the last stop as failed');
  const readiness = new Readiness();
  readiness.add({ name: 'database', check: () => control.query('SELECT 1') });
  // Writes of this thread that met a database outage (the failures of its inline runs, the outcomes
  // of keyed runs): give them a last chance, once the runs have ended and before the database closes.
  const writes = new WriteRetryQueue();
  lc.defer('write retries', () => writes.drain(STOP_WRITE_GRACE_MS));
  // The cluster joins after the supervisor (it serves the supervisor's runs) but leaves after it:
  // the runs have ended and given their leases back by then, so leave now rather than after a TTL.
  let cluster: Cluster | null = null;
  lc.defer('cluster', () => cluster?.close());

  // One client (and one connection pool) per provider on this thread: routes, model lists and inline hosts share them.
  const providers = createProviders(config);
  lc.defer('provider resilience', closeResilience);
  const admission = new Admission({ maxActiveRuns: config.MAX_ACTIVE_RUNS, adaptive: config.ADMISSION === 'adaptive' });
  const lag = admission.adaptive ? new LagBoard() : null;
  const sse = new SseStreams({
    heartbeatMs: config.SSE_HEARTBEAT_MS,
    queueCap: config.SSE_MAX_QUEUED_BYTES,
    // A response some other path had already answered or let go: a bug to see, not a client gone.
    onLost: (err) => log.error({ err }, 'an SSE stream found its response already let go; the stream is closed'),
  });
  // Closed after the supervisor: the streams of runs cut by its shutdown get their last frames first.
  lc.defer('sse streams', () => sse.close());
  const { supervisor, metrics, bindRuns } = await lc.open(
    'supervisor',
    () => startSupervisor(config, db, providers, { admission, lag, sse, cpu, recovered, writes }, log),
    (s) => s.supervisor.shutdown(),
  );
  // Who is calling: the admin token, a user's API key, or (AUTH_JWKS_URL) a single-sign-on JWT.
  const jwt = config.AUTH_JWKS_URL
    ? createJwtVerifier({ jwksUrl: config.AUTH_JWKS_URL, issuer: config.AUTH_ISSUER, audience: config.AUTH_AUDIENCE, log })
    : null;
  const callers = await lc.open('callers', () => new Callers({ adminToken: config.ADMIN_TOKEN, pool: db.pool, jwt }), (c) => c.close());
  // "listening" must mean ready: otherwise the first runs wait for the worker threads' boot.
  await supervisor.ready();
  if (config.REDIS_URL) {
    cluster = await Cluster.join({
      url: config.REDIS_URL,
      prefix: config.REDIS_KEY_PREFIX,
      instanceId: config.instanceId,
      leaseTtlMs: config.CLUSTER_LEASE_TTL_MS,
      local: localRunPort(supervisor),
      log,
    });
  }
  // The registry, chosen once: this process's runs, or the cluster's.
  const runs: Runs = cluster ? new ClusterRuns(supervisor, cluster, admission) : new LocalRuns(supervisor, admission);
  bindRuns(runs);
  const revocations = new UserRevocations(callers, runs, log);
  const responseEnds = new ResponseEnds(log);
  if (cluster) {
    const joined = cluster;
    await revocations.useCluster(joined);
    await responseEnds.useCluster(joined);
    readiness.add({ name: 'redis', check: () => joined.ping() });
    log.info({ instanceId: config.instanceId, redis: redact(config.REDIS_URL ?? '') }, 'cluster mode: joined');
    if (config.runTakeover) takeovers = new Takeovers({ pool: db.pool, runs, instanceId: config.instanceId, leaseTtlMs: config.CLUSTER_LEASE_TTL_MS, log, recovered, recordOutcome: (run, r) => Promise.all([recordContinuedOutcome(db.pool, run, r), recordContinuedResponse(db.pool, responseEnds, run, r)]).then(() => undefined) });
  }

  const clock = opts.clock ?? systemClock;
  const models = createModelRegistry(
    config,
    providers,
    clock,
    (provider, message) => log.warn({ provider, error: message }, 'model list failed to load'),
    upstreams.simulated,
  );
  const ctx: AppContext = {
    config,
    pool: db.pool,
    supervisor,
    runs,
    providers,
    tools: availableTools(config),
    log,
    clock,
    simulated: upstreams.simulated,
    models,
    readiness,
    metrics,
    sse,
    limits: new UserLimits(config, db.pool, admission, log),
    claimedKeys: new ClaimedKeys(),
    writes,
  };
  lc.defer('overload lag', () => lag?.stop());
  // Loads in the background: the server does not wait for any provider's list.
  await lc.open('models', () => models.start(), () => models.stop());

  const routes = appRoutes(ctx, revocations, responseEnds, opts);
  const bodies = new BodyPool(cpu);
  const app = uws.App();
  mountRoutes(app, routes, {
    defaultBodyLimit: DEFAULT_BODY_LIMIT,
    bodies,
    authenticate: callers.authenticate,
    cors: corsPolicy(config.CORS_ORIGINS),
    shed: startShedding(admission),
    errorShapes: [{ prefix: '/openai/', shape: openaiErrorShape }],
    onError: (err, req) => toHttpError(err, (_, ref) => log.error({ err, ref, method: req.method, path: req.path }, 'request failed')),
  });
  const listenSocket = await lc.open('listener', () => listenExclusive(app, config.HOST, config.PORT), (s) => uws.us_listen_socket_close(s));
  // Measured from here: the start-up's own stalls (migrations, worker boot) are no overload.
  lag?.start((worstMs) => (admission.lagMs = worstMs));
  if (lag) admission.watch(lag);
  const port = uws.us_socket_local_port(listenSocket);
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  const close = () => lc.close();
  const drain = new Drain({ admission, readiness, supervisor, log, close });
  return { url, port, ctx, routes, bodies, close, drain: (graceMs) => drain.run(graceMs), cut: () => drain.cut() };
}

function warnAboutConfig(config: Config, simulated: string[], log: Logger): void {
  if ((config.CHAT_CODING_TOOL_ENABLED || config.CHAT_SHELL_TOOL_ENABLED) && !config.CHAT_CODING_SSH_HOST_KEY_SHA256) {
    log.warn('remote tools accept any SSH host key: set CHAT_CODING_SSH_HOST_KEY_SHA256 to pin it');
  }
  if (simulated.length > 0) log.warn({ simulated }, 'served by the offline simulator (no key set)');
  const filesWarning = openFilesWarning(openFilesLimit(), config.MAX_ACTIVE_RUNS);
  if (filesWarning) log.warn(filesWarning);
  const retired = retiredVariablesWarning(config);
  if (retired) log.warn(retired);
}

/** The supervisor and its actor hosts (worker threads, or inline), with what observes its runs. */
function startSupervisor(
  config: Config,
  db: Database,
  providers: AppContext['providers'],
  { admission, lag, sse, cpu, recovered, writes }: { admission: Admission; lag: LagBoard | null; sse: SseStreams; cpu: CpuPool; recovered: RecoveredRuns; writes: WriteRetryQueue },
  log: Logger,
) {
  const workerSetup = (): WorkerSetup => {
    if (db.kind === 'postgres') {
      return { input: { config, databaseUrl: config.DATABASE_URL!, poolMax: 10 }, transferList: [], cleanup: async () => {} };
    }
    const { port1, port2 } = new MessageChannel();
    const cleanup = servePool(port1, db.pool);
    return { input: { config, databaseUrl: null, poolMax: 1, dbPort: port2 }, transferList: [port2], cleanup };
  };
  let metrics: Metrics | undefined;
  let runs: Runs | undefined;
  const checkpointed = () => metrics?.checkpoints.inc();
  const genAiObserved = (o: GenAiObservation) => metrics?.observeGenAi(o);
  // The actor threads' provider stats as each last posted them; this thread's are read when scraped.
  const workerStats = new Map<number, ResilienceStats>();
  const supervisor = new Supervisor<RunTypes>({
    hosts: Math.max(1, config.actorThreads),
    errorFrames,
    maxActiveRuns: config.MAX_ACTIVE_RUNS,
    factory:
      config.actorThreads === 0
        ? inlineHosts(runDepsFrom(config, db.pool, cpu, writes, providers, checkpointed, genAiObserved))
        : workerHosts(
            workerSetup,
            (msg, err) => log.error({ err }, msg),
            lag ? (index, p99Ms, busy) => lag.report(index, p99Ms, busy) : undefined,
            checkpointed,
            (index, stats) => workerStats.set(index, stats),
            genAiObserved,
          ),
    log: (level, message, err, runId) => log[level]({ err, ...(runId !== undefined && { runId }), ...runLogFields(runId) }, message),
    // Its runs' calls would stay `running` until the next restart, their checkpointed text unused.
    onHostLost: (lost) => {
      const ids = runs?.storedIds(lost) ?? [];
      if (ids.length === 0) return;
      recoverRunsById(db.pool, ids, recovered).catch((err: unknown) => log.error({ err, ids }, 'the runs of a dead actor thread could not be recovered; the next start recovers them'));
    },
    onEnd: (run, result) => {
      runs?.ended(run);
      metrics?.observeRun(run.kind, run.label, result.ok, (Date.now() - run.startedAt) / 1000);
    },
    admission,
  });
  metrics = createMetrics(supervisor, sse, recovered, admission, () => sumStats([threadStats(), ...workerStats.values()]));
  // The registry is chosen once the cluster is joined (or not); no run starts before.
  return { supervisor, metrics, bindRuns: (r: Runs) => void (runs = r) };
}

/** Every route of the service, and the tests' extra ones. */
function appRoutes(ctx: AppContext, revocations: UserRevocations, responseEnds: ResponseEnds, opts: ServerOptions): Route[] {
  const registry = ctx.metrics.registry;
  return withOpenApiRoute([
    ...systemRoutes(ctx),
    ...chatRoutes(ctx),
    ...completionRoutes(ctx),
    ...searchRoutes(ctx),
    ...searchRunRoutes(ctx),
    ...modelRoutes(ctx),
    ...titleRoutes(ctx),
    ...userRoutes(ctx, revocations),
    ...openaiRoutes(ctx, responseEnds),
    ...webRoutes(),
    ...(opts.routes?.(ctx) ?? []),
    {
      method: 'GET',
      path: '/metrics',
      handler: async (req, reply) => {
        if (!req.caller.admin) throw ADMIN_REQUIRED();
        reply.text(200, await registry.metrics(), registry.contentType);
      },
    },
  ]);
}
