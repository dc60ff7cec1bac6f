// A start in its own process that, unlike src/app/main.ts, never calls process.exit when the start fails:
// the process then ends by itself only if the failed start closed everything it had opened (a pool,
// a socket, a worker thread or a ref'd timer left behind keeps it alive). Run by test/api/failed-start.test.ts.
import { startServer } from '../../src/app/app.ts';
import { loadConfig } from '../../src/base/config.ts';
import { listenExclusive, uws } from '../../src/http/uws.ts';
import { createLogger } from '../../src/base/log.ts';

const config = loadConfig();
try {
  const server = await startServer(config, { log: createLogger('debug') });
  console.log(`listening on ${server.url}`);
  await server.close();
} catch (err) {
  console.error(`failed to start: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
  // Exclusive, as the service listens: it fails while anything still holds the port.
  uws.us_listen_socket_close(await listenExclusive(uws.App(), config.HOST, config.PORT));
  console.error(`port ${config.PORT} is free`);
  // Diagnostics only (unref'd, so it holds nothing): names what keeps the process alive if it does not end.
  setTimeout(() => console.error('still open:', process.getActiveResourcesInfo().join(', ')), 30_000).unref();
}
