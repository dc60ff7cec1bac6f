// The main thread's part of a start, whole: a uWS server in this process with the service's real router
// and completion routes (src/routes/completions.ts: the body, zod, the run request, the SSE sink) over a
// real Supervisor whose host answers at once (supervisor.ts), so the request, the route, the registry,
// the sink's head, frames and end are measured together, as they run on the service's main thread.
// No database (a new chat's start reads none before the run) and no actor thread (own rows).
import { ADMIN_CALLER } from '../../src/auth/caller.ts';
import type { AppContext } from '../../src/service/context.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { BodyPool } from '../../src/http/body-pool.ts';
import { mountRoutes } from '../../src/http/router.ts';
import { SseStreams } from '../../src/http/sse.ts';
import { toHttpError } from '../../src/http/to-http-error.ts';
import { uws } from '../../src/http/uws.ts';
import type { ProviderAdapter, ProviderName } from '../../src/providers/types.ts';
import { completionRoutes } from '../../src/routes/completions.ts';
import { LocalRuns } from '../../src/service/runs.ts';
import { shortRunSupervisor } from './supervisor.ts';

export const STREAM_PATH = '/v1/chat-completions/stream';

export function startRouteServer(): Promise<{ port: number; close(): void }> {
  const noop = { inc: () => {} };
  const ctx = {
    runs: new LocalRuns(shortRunSupervisor(100_000)),
    providers: new Map<ProviderName, ProviderAdapter>([['provider_c', {} as ProviderAdapter]]),
    metrics: { startConflicts: noop, runsStopped: noop },
    config: { SSE_MAX_QUEUED_BYTES: 1024 * 1024 },
    sse: new SseStreams({ heartbeatMs: 15_000 }),
    limits: { checkBudgets: () => null, runOptions: () => ({ owner: ADMIN_CALLER.userId }) },
  } as unknown as AppContext;
  const app = uws.App();
  mountRoutes(app, completionRoutes(ctx), {
    defaultBodyLimit: 64 * 1024,
    // Its bodies are small: the pool never starts a thread.
    bodies: new BodyPool(new CpuPool()),
    authenticate: () => ADMIN_CALLER,
    onError: (err) => toHttpError(err, (e) => console.error('[ledger route]', e)),
  });
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (socket) => {
      if (!socket) return reject(new Error('uWS did not listen'));
      const close = () => {
        uws.us_listen_socket_close(socket);
        ctx.sse.close();
      };
      resolve({ port: uws.us_socket_local_port(socket), close });
    });
  });
}
