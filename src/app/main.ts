// `make run`: start the service in the foreground; stop cleanly on SIGTERM/SIGINT.
import { startServer } from './app.ts';
import { ConfigError, loadConfig } from '../base/config.ts';
import { ListenError, NativeServerError } from '../http/uws.ts';
import { createLogger } from '../base/log.ts';
import { stopTracing } from '../telemetry/tracing.ts';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.LOG_LEVEL);
  const server = await startServer(config, { log });
  log.info({ url: server.url, database: config.DATABASE_URL ? 'postgres' : `embedded (${config.DATA_DIR})`, actorThreads: config.actorThreads }, `listening on ${server.url}`);
  let signals = 0;
  const stop = async (signal: string) => {
    // The first signal drains (SHUTDOWN_GRACE_MS); a second one cuts what is still running.
    if (++signals > 1) {
      log.warn({ signal }, 'second signal: cutting the runs still going');
      server.cut();
      return;
    }
    log.info({ signal, graceMs: config.SHUTDOWN_GRACE_MS }, 'stopping');
    await server.drain(config.SHUTDOWN_GRACE_MS);
    // The spans of the drained runs, still batched, go before the process does.
    await stopTracing();
    log.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

main().catch((err) => {
  if (err instanceof NativeServerError || err instanceof ListenError) console.error(err.message);
  else console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
