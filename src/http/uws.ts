// Loads uWebSockets.js and refuses to go on when its native binary did not load: the package
// silently falls back to a slow pure-JS server, which would void every performance promise.
import { createRequire } from 'node:module';
import type * as UWS from 'uWebSockets.js';

const require = createRequire(import.meta.url);

export class NativeServerError extends Error {
  constructor(message: string) {
    super(message);
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
