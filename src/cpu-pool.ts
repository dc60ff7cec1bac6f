// The piscina pool for CPU-heavy work that must not stall the event loop: HTML to text (fetch_url)
// and parsing big request bodies (src/http/body-pool.ts). One pool, one worker module per kind of
// task (piscina's per-run `filename`). Created on first use (most processes never need it) and closed
// by closeCpuPool() on shutdown so it does not keep the process alive.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';

let pool: Piscina | null = null;

function getPool(): Piscina {
  pool ??= new Piscina({
    minThreads: 0,
    // Tasks are occasional: a few threads, never all cores (the actor hosts need them).
    maxThreads: Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2))),
    // Idle workers exit, so a process that needed one task does not hold threads forever.
    idleTimeout: 30_000,
  });
  return pool;
}

export interface PoolRunOptions {
  signal?: AbortSignal;
  /** Moved to the worker, not copied (the sender loses them). */
  transferList?: ArrayBuffer[];
}

/** Runs the default export of the worker module at `worker` on `task`. */
export function runInPool<T, R>(worker: URL, task: T, opts: PoolRunOptions = {}): Promise<R> {
  return getPool().run(task, {
    filename: fileURLToPath(worker),
    signal: opts.signal ?? null,
    transferList: opts.transferList as never,
  }) as Promise<R>;
}

export async function closeCpuPool(): Promise<void> {
  const p = pool;
  pool = null;
  if (p) await p.destroy();
}
