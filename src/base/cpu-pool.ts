// The piscina pool for CPU-heavy work that must not stall the event loop: HTML to text (fetch_url)
// and parsing big request bodies (src/http/body-pool.ts). One pool per thread that needs one (the
// server's main thread, built in src/app/app.ts; each actor host thread, src/domain/run-deps.ts), one worker
// module per kind of task (piscina's per-run `filename`). Its threads start on first use (most
// processes never need them), and close() ends them so they do not keep the process alive.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { ErrorCodes, ServiceError } from './errors.ts';

export interface PoolRunOptions {
  signal?: AbortSignal;
  /** Moved to the worker, not copied (the sender loses them). */
  transferList?: ArrayBuffer[];
  /**
   * Caps the JS heap of the thread that runs the task, for input from strangers whose cost cannot be
   * known up front: past it the thread ends and only its task fails (WorkerHeapLimitError). Tasks
   * with a cap run on threads of their own, one set per cap.
   */
  maxHeapMb?: number;
}

/** A task's thread went past its maxHeapMb and was ended. */
export class WorkerHeapLimitError extends ServiceError {
  constructor(readonly maxHeapMb: number, options?: { cause?: unknown }) {
    super(ErrorCodes.WORKER_HEAP_LIMIT, `the task needed more than ${maxHeapMb} MB of heap`, options);
    this.name = 'WorkerHeapLimitError';
  }
}

export class CpuPool {
  /** By heap cap; 0 is the uncapped pool. */
  private pools = new Map<number, Piscina>();

  /** Runs the default export of the worker module at `worker` on `task`. */
  run<T, R>(worker: URL, task: T, opts: PoolRunOptions = {}): Promise<R> {
    const cap = opts.maxHeapMb ?? 0;
    const run = this.pool(cap).run(task, {
      filename: fileURLToPath(worker),
      signal: opts.signal ?? null,
      transferList: opts.transferList as never,
    }) as Promise<R>;
    if (cap === 0) return run;
    return run.catch((err: unknown) => {
      throw (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY' ? new WorkerHeapLimitError(cap, { cause: err }) : err;
    });
  }

  private pool(cap: number): Piscina {
    let p = this.pools.get(cap);
    if (!p) {
      p = new Piscina({
        minThreads: 0,
        // Tasks are occasional: a few threads, never all cores (the actor hosts need them).
        maxThreads: Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2))),
        // Idle workers exit, so a process that needed one task does not hold threads forever.
        idleTimeout: 30_000,
        ...(cap > 0 && { resourceLimits: { maxOldGenerationSizeMb: cap } }),
      });
      this.pools.set(cap, p);
    }
    return p;
  }

  /** Ends the pool's threads; a later run starts new ones. */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.destroy()));
  }
}
