// Assembles the service: upstreams (real or simulated), the database, the supervisor and its actor
// hosts, and the uWS app with every route, at the server root and under /api.
import { MessageChannel } from 'node:worker_threads';
import type { Logger } from 'pino';
import { inlineHosts, workerHosts, type WorkerSetup } from '../actors/hosts.ts';
import { Supervisor } from '../actors/supervisor.ts';
import { bearerGuard } from './auth.ts';
import type { Config } from './config.ts';
import { systemClock, type AppContext, type Clock } from './context.ts';
import { openDatabase } from './db/pool.ts';
import { servePool } from './db/remote-pool.ts';
import { HttpError } from './http/errors.ts';
import { mountRoutes, type Route } from './http/router.ts';
import { setHeartbeatInterval } from './http/sse.ts';
import { uws, type us_listen_socket } from './http/uws.ts';
import { createLogger } from './log.ts';
import { createMetrics } from './metrics.ts';
import { createModelRegistry } from './models/registry.ts';
import { createProviders } from './providers/index.ts';
import { chatRoutes } from './routes/chats.ts';
import { completionRoutes } from './routes/completions.ts';
import { modelRoutes } from './routes/models.ts';
import { searchRunRoutes } from './routes/search-runs.ts';
import { searchRoutes } from './routes/searches.ts';
import { systemRoutes } from './routes/system.ts';
import { titleRoutes } from './routes/titles.ts';
import { runDepsFrom } from './run-deps.ts';
import { markInterruptedLlmCalls } from './store/llm-calls.ts';
import { availableTools, closeTools } from './tools/registry.ts';
import { resolveUpstreams } from './upstreams.ts';

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

export interface Server {
  url: string;
  port: number;
  ctx: AppContext;
  close(): Promise<void>;
}

export interface ServerOptions {
  log?: Logger;
  clock?: Clock;
  /** Extra routes (tests). */
  routes?: (ctx: AppContext) => Route[];
}

export async function startServer(baseConfig: Config, opts: ServerOptions = {}): Promise<Server> {
  const log = opts.log ?? createLogger(baseConfig.LOG_LEVEL);
  const upstreams = await resolveUpstreams(baseConfig);
  const config = upstreams.config;
  if ((config.CHAT_CODING_TOOL_ENABLED || config.CHAT_SHELL_TOOL_ENABLED) && !config.CHAT_CODING_SSH_HOST_KEY_SHA256) {
    log.warn('remote tools accept any SSH host key: set CHAT_CODING_SSH_HOST_KEY_SHA256 to pin it');
  }
  if (upstreams.simulated.length > 0) log.warn({ simulated: upstreams.simulated }, 'served by the offline simulator (no key set)');

  const poolMax = 20;
  const db = await openDatabase(config, { poolMax, onIdleError: (err) => log.warn({ err }, 'idle database connection failed') });
  const interrupted = await markInterruptedLlmCalls(db.pool, { instanceId: config.instanceId });
  if (interrupted > 0) log.warn({ interrupted }, 'marked LlmCalls interrupted by the last stop as failed');

  const workerSetup = (): WorkerSetup => {
    if (db.kind === 'postgres') {
      return { input: { config, databaseUrl: config.DATABASE_URL!, poolMax: 10 }, transferList: [], cleanup: async () => {} };
    }
    const { port1, port2 } = new MessageChannel();
    const cleanup = servePool(port1, db.pool);
    return { input: { config, databaseUrl: null, poolMax: 1, dbPort: port2 }, transferList: [port2], cleanup };
  };
  let metrics: ReturnType<typeof createMetrics> | undefined;
  const supervisor = new Supervisor({
    hosts: Math.max(1, config.actorThreads),
    maxActiveRuns: config.MAX_ACTIVE_RUNS,
    factory:
      config.actorThreads === 0
        ? inlineHosts(runDepsFrom(config, db.pool))
        : workerHosts(workerSetup, (msg, err) => log.error({ err }, msg)),
    onEnd: (entry, result) =>
      metrics?.observeRun(entry.kind, entry.label, result.ok, (performance.now() - entry.startedAt) / 1000),
  });
  metrics = createMetrics(supervisor);
  // "listening" must mean ready: otherwise the first runs wait for the worker threads' boot.
  await supervisor.ready();

  const providers = createProviders(config);
  const clock = opts.clock ?? systemClock;
  const models = createModelRegistry(config, providers, clock, (provider, message) =>
    log.warn({ provider, error: message }, 'model list failed to load'),
  );
  const ctx: AppContext = {
    config,
    pool: db.pool,
    supervisor,
    providers,
    tools: availableTools(config),
    log,
    clock,
    simulated: upstreams.simulated,
    models,
  };
  // Loads in the background: the server does not wait for any provider's list.
  models.start();

  setHeartbeatInterval(config.SSE_HEARTBEAT_MS);
  const registry = metrics.registry;
  const routes: Route[] = [
    ...systemRoutes(ctx),
    ...chatRoutes(ctx),
    ...completionRoutes(ctx),
    ...searchRoutes(ctx),
    ...searchRunRoutes(ctx),
    ...modelRoutes(ctx),
    ...titleRoutes(ctx),
    ...(opts.routes?.(ctx) ?? []),
    {
      method: 'GET',
      path: '/metrics',
      handler: async (_req, reply) => reply.text(200, await registry.metrics(), registry.contentType),
    },
  ];

  const app = uws.App();
  mountRoutes(app, routes, {
    defaultBodyLimit: DEFAULT_BODY_LIMIT,
    guard: bearerGuard(config.ADMIN_TOKEN),
    onError(err, req) {
      if (err instanceof HttpError) return err;
      log.error({ err, method: req.method, path: req.path }, 'request failed');
      return new HttpError(500, `internal error: ${(err as Error)?.message ?? String(err)}`);
    },
  });

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(config.HOST, config.PORT, (socket) => (socket ? resolve(socket) : reject(new Error(`cannot listen on ${config.HOST}:${config.PORT}`))));
  });
  const port = uws.us_socket_local_port(listenSocket);
  const url = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      uws.us_listen_socket_close(listenSocket);
      models.stop();
      await supervisor.shutdown();
      await db.close();
      await closeTools();
      await upstreams.close();
    })());

  return { url, port, ctx, close };
}
