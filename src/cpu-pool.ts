// The piscina pool for CPU-heavy work that must not stall the event loop: HTML to text (fetch_url)
// and parsing big request bodies (src/http/body-pool.ts). One pool per thread that needs one (the
// server's main thread, built in src/app.ts; each actor host thread, src/run-deps.ts), one worker
// module per kind of task (piscina's per-run `filename`). Its threads start on first use (most
// processes never need them), and close() ends them so they do not keep the process alive.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';

export interface PoolRunOptions {
  signal?: AbortSignal;
  /** Moved to the worker, not copied (the sender loses them). */
  transferList?: ArrayBuffer[];
}

export class CpuPool {
  private pool: Piscina | null = null;

  /** Runs the default export of the worker module at `worker` on `task`. */
  run<T, R>(worker: URL, task: T, opts: PoolRunOptions = {}): Promise<R> {
    this.pool ??= new Piscina({
      minThreads: 0,
      // Tasks are occasional: a few threads, never all cores (the actor hosts need them).
      maxThreads: Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2))),
      // Idle workers exit, so a process that needed one task does not hold threads forever.
      idleTimeout: 30_000,
    });
    return this.pool.run(task, {
      filename: fileURLToPath(worker),
      signal: opts.signal ?? null,
      transferList: opts.transferList as never,
    }) as Promise<R>;
  }

  /** Ends the pool's threads; a later run starts new ones. */
  async close(): Promise<void> {
    const p = this.pool;
    this.pool = null;
    if (p) await p.destroy();
  }
}
