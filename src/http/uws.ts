// Loads uWebSockets.js and refuses to go on when its native binary did not load: the package
// silently falls back to a slow pure-JS server, which would void every performance promise.
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

const require = createRequire(import.meta.url);

export class NativeServerError extends ServiceError {
  constructor(message: string) {
    super(ErrorCodes.NATIVE_SERVER, message);
    this.name = 'NativeServerError';
  }
}

function load(): typeof UWS {
  const entry = require.resolve('uWebSockets.js');
  // The fallback logs to the console when it kicks in; keep that quiet, we report it ourselves.
  const warn = console.warn;
  console.warn = () => {};
  let mod: typeof UWS;
  try {
    mod = require(entry);
  } finally {
    console.warn = warn;
  }
  const native = Object.keys(require.cache).some((k) => /uws_[a-z0-9_]+\.node$/.test(k));
  if (!native || process.env.UWS_USE_FALLBACK) {
    throw new NativeServerError(
      `uWebSockets.js native module did not load for Node ${process.versions.node} ` +
        `(ABI ${process.versions.modules}, ${process.platform}-${process.arch}); refusing to start on the slow fallback`,
    );
  }
  return mod;
}

export const uws = load();
export type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';

export class ListenError extends ServiceError {
  constructor(message: string) {
    super(ErrorCodes.LISTEN, message);
    this.name = 'ListenError';
  }
}

type ExclusiveListen = (host: string, port: number, options: number, cb: (socket: UWS.us_listen_socket | false) => void) => void;

/**
 * Listens without port sharing. uWS sets SO_REUSEPORT by default, so a second instance on a busy
 * port would listen beside the first and take half its connections; exclusively, it fails instead.
 * (The 4-argument form exists in the native module but not in the package's typings.)
 */
export function listenExclusive(app: UWS.TemplatedApp, host: string, port: number): Promise<UWS.us_listen_socket> {
  const exclusive = (uws as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT;
  if (typeof exclusive !== 'number') {
    return Promise.reject(new NativeServerError('this uWebSockets.js build has no LIBUS_LISTEN_EXCLUSIVE_PORT: refusing to share the port'));
  }
  return new Promise((resolve, reject) => {
    (app.listen as unknown as ExclusiveListen).call(app, host, port, exclusive, (socket) => {
      if (socket) resolve(socket);
      else reject(new ListenError(`cannot listen on ${host}:${port}: port ${port} is already in use (or the address is not available); stop the other process or set PORT`));
    });
  });
}
