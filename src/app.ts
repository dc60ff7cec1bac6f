// Assembles the service: upstreams (real or simulated), the database, the supervisor and its actor
// hosts, and the uWS app with every route, at the server root and under /api.
import { MessageChannel } from 'node:worker_threads';
import type { Logger } from 'pino';
import { inlineHosts, workerHosts, type WorkerSetup } from '../actors/hosts.ts';
import { LagBoard } from '../actors/lag-report.ts';
import { errorFrames } from '../actors/runners.ts';
import type { RunTypes } from '../actors/runs.ts';
import { Supervisor } from '../actors/runtime/supervisor.ts';
import { Admission } from './admission.ts';
import { bearerGuard } from './http/auth.ts';
import { Cluster } from './cluster/cluster.ts';
import type { Config } from './config.ts';
import { systemClock, type AppContext, type Clock } from './context.ts';
import { openControlDb } from './db/control-pool.ts';
import { openDatabase, redact } from './db/pool.ts';
import { servePool } from './db/remote-pool.ts';
import { writeRetries } from './db/write-retry.ts';
import { Drain } from './drain.ts';
import { startHeartbeat } from './heartbeat.ts';
import { corsPolicy } from './http/cors.ts';
import { toHttpError } from './http/to-http-error.ts';
import { mountRoutes, type Route } from './http/router.ts';
import { setHeartbeatInterval } from './http/sse.ts';
import { listenExclusive, uws, type us_listen_socket } from './http/uws.ts';
import { createLogger } from './log.ts';
import { createMetrics } from './metrics.ts';
import { createModelRegistry } from './models/registry.ts';
import { openFilesLimit, openFilesWarning } from './open-files.ts';
import { createProviders } from './providers/index.ts';
import { Readiness } from './readiness.ts';
import { chatRoutes } from './routes/chats.ts';
import { completionRoutes } from './routes/completions.ts';
import { modelRoutes } from './routes/models.ts';
import { withOpenApiRoute } from './routes/openapi.ts';
import { searchRunRoutes } from './routes/search-runs.ts';
import { searchRoutes } from './routes/searches.ts';
import { systemRoutes } from './routes/system.ts';
import { titleRoutes } from './routes/titles.ts';
import { webRoutes } from './routes/web.ts';
import { runDepsFrom } from './run-deps.ts';
import { Runs } from './runs.ts';
import { markInterruptedLlmCalls } from './store/llm-calls.ts';
import { availableTools, closeTools } from './tools/registry.ts';
import { resolveUpstreams } from './upstreams.ts';

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
  const upstreams = await resolveUpstreams(baseConfig);
  const config = upstreams.config;
  if ((config.CHAT_CODING_TOOL_ENABLED || config.CHAT_SHELL_TOOL_ENABLED) && !config.CHAT_CODING_SSH_HOST_KEY_SHA256) {
    log.warn('remote tools accept any SSH host key: set CHAT_CODING_SSH_HOST_KEY_SHA256 to pin it');
  }
  if (upstreams.simulated.length > 0) log.warn({ simulated: upstreams.simulated }, 'served by the offline simulator (no key set)');
  const filesWarning = openFilesWarning(openFilesLimit(), config.MAX_ACTIVE_RUNS);
  if (filesWarning) log.warn(filesWarning);

  const poolMax = 20;
  const db = await openDatabase(config, { poolMax, onIdleError: (err) => log.warn({ err }, 'idle database connection failed') });
  const control = openControlDb(db, config.DATABASE_URL, CONTROL_DEADLINE_MS);
  const heartbeat = await startHeartbeat({ db: control, instanceId: config.instanceId, intervalMs: config.INSTANCE_HEARTBEAT_MS, log });
  const interrupted = await markInterruptedLlmCalls(db.pool, { instanceId: config.instanceId });
  if (interrupted > 0) log.warn({ interrupted }, 'marked LlmCalls interrupted by the last stop as failed');
  const readiness = new Readiness();
  readiness.add({ name: 'database', check: () => control.query('SELECT 1') });

  const workerSetup = (): WorkerSetup => {
    if (db.kind === 'postgres') {
      return { input: { config, databaseUrl: config.DATABASE_URL!, poolMax: 10 }, transferList: [], cleanup: async () => {} };
    }
    const { port1, port2 } = new MessageChannel();
    const cleanup = servePool(port1, db.pool);
    return { input: { config, databaseUrl: null, poolMax: 1, dbPort: port2 }, transferList: [port2], cleanup };
  };
  // One client (and one connection pool) per provider on this thread: routes, model lists and inline hosts share them.
  const providers = createProviders(config);
  let metrics: ReturnType<typeof createMetrics> | undefined;
  let runs: Runs | undefined;
  const admission = new Admission({ maxActiveRuns: config.MAX_ACTIVE_RUNS, overloadLagMs: config.OVERLOAD_LAG_MS });
  const lag = config.OVERLOAD_LAG_MS > 0 ? new LagBoard() : null;
  const supervisor = new Supervisor<RunTypes>({
    hosts: Math.max(1, config.actorThreads),
    errorFrames,
    maxActiveRuns: config.MAX_ACTIVE_RUNS,
    factory:
      config.actorThreads === 0
        ? inlineHosts(runDepsFrom(config, db.pool, providers))
        : workerHosts(workerSetup, (msg, err) => log.error({ err }, msg), lag ? (index, p99Ms) => lag.report(index, p99Ms) : undefined),
    log: (level, message, err) => log[level]({ err }, message),
    onEnd: (run, result) => {
      runs?.ended(run);
      metrics?.observeRun(run.kind, run.label, result.ok, (Date.now() - run.startedAt) / 1000);
    },
    admission,
  });
  metrics = createMetrics(supervisor, admission);
  runs = new Runs(supervisor);
  // "listening" must mean ready: otherwise the first runs wait for the worker threads' boot.
  await supervisor.ready();
  let cluster: Cluster | null = null;
  if (config.REDIS_URL) {
    try {
      cluster = await Cluster.join({
        url: config.REDIS_URL,
        prefix: config.REDIS_KEY_PREFIX,
        instanceId: config.instanceId,
        leaseTtlMs: config.CLUSTER_LEASE_TTL_MS,
        local: runs.localPort,
        log,
      });
    } catch (err) {
      lag?.stop();
      await supervisor.shutdown();
      await heartbeat.stop();
      await control.close();
      await db.close();
      await upstreams.close();
      throw err;
    }
    runs.useCluster(cluster);
    readiness.add({ name: 'redis', check: () => cluster!.ping() });
    log.info({ instanceId: config.instanceId, redis: redact(config.REDIS_URL) }, 'cluster mode: joined');
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
  };
  // Loads in the background: the server does not wait for any provider's list.
  models.start();

  setHeartbeatInterval(config.SSE_HEARTBEAT_MS);
  const registry = metrics.registry;
  const routes: Route[] = withOpenApiRoute([
    ...systemRoutes(ctx),
    ...chatRoutes(ctx),
    ...completionRoutes(ctx),
    ...searchRoutes(ctx),
    ...searchRunRoutes(ctx),
    ...modelRoutes(ctx),
    ...titleRoutes(ctx),
    ...webRoutes(),
    ...(opts.routes?.(ctx) ?? []),
    {
      method: 'GET',
      path: '/metrics',
      handler: async (_req, reply) => reply.text(200, await registry.metrics(), registry.contentType),
    },
  ]);

  const app = uws.App();
  mountRoutes(app, routes, {
    defaultBodyLimit: DEFAULT_BODY_LIMIT,
    guard: bearerGuard(config.ADMIN_TOKEN),
    cors: corsPolicy(config.CORS_ORIGINS),
    onError: (err, req) => toHttpError(err, () => log.error({ err, method: req.method, path: req.path }, 'request failed')),
  });

  let listenSocket: us_listen_socket | undefined;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      if (listenSocket) uws.us_listen_socket_close(listenSocket);
      models.stop();
      lag?.stop();
      await supervisor.shutdown();
      // Runs have ended and given their leases back; leave the cluster now rather than after a TTL.
      await cluster?.close();
      // Runs on this thread whose failure met a database outage: give their writes a last chance.
      await writeRetries.drain(STOP_WRITE_GRACE_MS);
      await heartbeat.stop();
      await control.close();
      await db.close();
      await closeTools();
      await upstreams.close();
    })());

  try {
    listenSocket = await listenExclusive(app, config.HOST, config.PORT);
  } catch (err) {
    await close();
    throw err;
  }
  // Measured from here: the start-up's own stalls (migrations, worker boot) are no overload.
  lag?.start((worstMs) => (admission.lagMs = worstMs));
  const port = uws.us_socket_local_port(listenSocket);
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  const drain = new Drain({ admission, readiness, supervisor, log, close });
  return { url, port, ctx, routes, close, drain: (graceMs) => drain.run(graceMs), cut: () => drain.cut() };
}
