// The two kinds of actor host the supervisor can run on: worker threads (ACTOR_THREADS ≥ 1) or the
// main thread itself (ACTOR_THREADS=0, for tests and debugging). Both run the same actors.
import { Worker } from 'node:worker_threads';
import type { RunDeps, RunDepsInput } from '../src/domain/run-deps.ts';
import { createHost } from './runtime/host.ts';
import type { Batch, ToHost } from './runtime/protocol.ts';
import { runners } from './runners.ts';
import type { HostFactory } from './runtime/supervisor.ts';
import type { LagReport } from './lag-report.ts';
import type { GenAiObservation } from '../src/telemetry/genai-metrics.ts';
import { tracingConfigured } from '../src/telemetry/tracing.ts';
import type { ProviderStatsReport, ResilienceStats } from '../src/providers/resilience/index.ts';

export function inlineHosts(deps: RunDeps): HostFactory {
  return (_index, onBatch) => {
    const host = createHost(runners, deps, onBatch);
    return { send: (msg: ToHost) => host.receive(msg), terminate: async () => {}, ready: Promise.resolve() };
  };
}

/** What one worker is handed, and what to clean up when it goes. */
export interface WorkerSetup {
  input: RunDepsInput;
  transferList: Transferable[];
  cleanup(): Promise<void>;
}

/** How long a release may wait for other messages to cross with (it only lets a worker forget a run). */
export const RELEASE_WAIT_MS = 20;

/**
 * Messages to one worker go out once per event-loop turn, in order: the starts of one loop iteration
 * and the releases of one batch of ended runs cross as one postMessage (each wakes the worker). A turn
 * with only releases waits up to RELEASE_WAIT_MS for a start or a cancel to go with: at a few hundred
 * starts a second that saves the worker one wake-up per run.
 */
export function batched(post: (msgs: ToHost[]) => void, releaseWaitMs = RELEASE_WAIT_MS): (msg: ToHost) => void {
  let queue: ToHost[] = [];
  let scheduled = false;
  let lazy: NodeJS.Timeout | null = null;
  const flush = (): void => {
    scheduled = false;
    const msgs = queue;
    queue = [];
    if (msgs.length > 0) post(msgs);
  };
  const flushLazy = (): void => {
    lazy = null;
    if (!scheduled) flush();
  };
  return (msg) => {
    queue.push(msg);
    if (scheduled) return;
    if (msg.t === 'release') {
      if (!lazy) {
        lazy = setTimeout(flushLazy, releaseWaitMs);
        lazy.unref();
      }
      return;
    }
    scheduled = true;
    setImmediate(flush);
  };
}

/** What a worker posts when its checkpoint timer has written a statement. */
export interface CheckpointReport {
  t: 'checkpoint';
}

/** Asks a worker to send its batched spans before it is terminated; it answers `{ t: 'flushed' }`. */
export const FLUSH = { t: 'flush' } as const;
const FLUSH_WAIT_MS = 2000;

/** What a worker posts when one of its provider calls has ended (GenAI metrics). */
export interface GenAiReport {
  t: 'genai';
  o: GenAiObservation;
}

export function workerHosts(
  setup: () => WorkerSetup,
  onLog: (msg: string, err?: unknown) => void,
  onLag?: (index: number, p99Ms: number, busy: number) => void,
  onCheckpoint?: () => void,
  onProviderStats?: (index: number, stats: ResilienceStats) => void,
  onGenAi?: (o: GenAiObservation) => void,
): HostFactory {
  return (index, onBatch, onExit) => {
    const { input, transferList, cleanup } = setup();
    const worker = new Worker(new URL('./worker-boot.mjs', import.meta.url), {
      workerData: input,
      transferList: transferList as never,
      name: `actor-host-${index}`,
    });
    let stopping = false;
    let markReady!: () => void;
    let failBoot!: (err: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      failBoot = reject;
    });
    ready.catch(() => {}); // a boot failure is also reported through onExit
    let flushed: (() => void) | null = null;
    worker.on('message', (msg: Batch | LagReport | CheckpointReport | ProviderStatsReport | GenAiReport | { t: 'ready' } | { t: 'flushed' }) => {
      if (msg.t === 'batch') onBatch(msg);
      else if (msg.t === 'flushed') flushed?.();
      else if (msg.t === 'lag') onLag?.(index, msg.p99Ms, msg.busy);
      else if (msg.t === 'checkpoint') onCheckpoint?.();
      else if (msg.t === 'genai') onGenAi?.(msg.o);
      else if (msg.t === 'provider_stats') onProviderStats?.(index, msg.stats);
      else markReady();
    });
    worker.on('error', (err) => {
      onLog(`actor host ${index} crashed`, err);
    });
    worker.on('exit', (code) => {
      failBoot(new Error(`actor host ${index} exited with code ${code} before it was ready`));
      void cleanup();
      if (!stopping) onExit(new Error(`actor host ${index} exited with code ${code}`));
    });
    return {
      ready,
      send: batched((msgs) => worker.postMessage(msgs)),
      terminate: async () => {
        stopping = true;
        // Tracing on: the thread sends the spans it still batches first (a bounded wait: it may be stuck).
        if (tracingConfigured()) {
          const done = new Promise<void>((r) => (flushed = r));
          worker.postMessage(FLUSH);
          await Promise.race([done, new Promise((r) => setTimeout(r, FLUSH_WAIT_MS).unref())]);
        }
        await worker.terminate();
      },
    };
  };
}
