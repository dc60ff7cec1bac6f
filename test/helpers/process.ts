// The real entry point (`src/app/main.ts`) in a child process, as `make run` starts it: it resolves
// once the service logs its address. For tests of the process itself: start, signals, restarts.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { entryArgs } from './entry.ts';
import { readSse, sim, type SseEvent } from './server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface ServiceProcess {
  child: ChildProcess;
  url: string;
  /** Everything it printed so far (stdout and stderr). */
  output: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

/** Starts the service with only `env` (plus PATH and HOME); rejects with `code` and `out` if it exits first. */
export function startService(env: Record<string, string>, startTimeoutMs = 100_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, entryArgs('src/app/main.ts'), {
    cwd: root,
    // The admission's defaults, as a deployment has them. An unkeyed service serves from its own
    // simulator: its instant one-line answer keeps tests fast.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', SIM_DEFAULT_REPLY: 'echo', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    // Generous: a first start on a fresh DATA_DIR runs PGlite's initdb, which takes a minute on a
    // loaded 2-core machine; the per-file test timeout still bounds the whole.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no listening line in time:\n${out}`));
    }, startTimeoutMs);
    const check = () => {
      const m = /listening on (http:\/\/[^"\s]+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        child.stdout!.off('data', check);
        resolve({ child, url: m[1]!, output: () => out, exited });
      }
    };
    child.stdout!.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`exited with ${code}:\n${out}`), { code, out }));
    });
  });
}

/** Sends `signal` and resolves with the exit code. */
export function stopService(p: ServiceProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  p.child.kill(signal);
  return p.exited;
}

/** A completion body for the simulator that the entry point starts when no key is set. */
export const simCompletion = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ provider: 'provider_c', model: 'sim-c-large', enabledTools: [], messages: [{ role: 'user', content }], ...extra });

/**
 * Starts a persisted stream of about 20 s and resolves once its first delta has arrived, with its
 * `meta` event and the rest of its events (what arrived, when the server is killed under it).
 */
export async function startLongStream(service: ServiceProcess): Promise<{ meta: SseEvent; rest: Promise<SseEvent[]> }> {
  const res = await fetch(`${service.url}/v1/chat-completions/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: simCompletion(sim({ deltas: 400, rate: 20 })),
  });
  let firstDelta!: () => void;
  const started = new Promise<void>((r) => (firstDelta = r));
  const events: SseEvent[] = [];
  const rest = readSse(res, new AbortController(), undefined, (ev) => {
    events.push(ev);
    if (ev.event === 'delta') firstDelta();
  }).catch(() => events);
  await Promise.race([started, rest]);
  if (events[0]?.event !== 'meta') throw new Error(`the stream did not open with meta: ${JSON.stringify(events)}`);
  return { meta: events[0], rest };
}
