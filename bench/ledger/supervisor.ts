// The supervisor's part of the ledger (main thread): the short run behind the route's stage, and the
// fan-out of a turn's deltas to subscribers. A real Supervisor on a host port that answers on later event-loop
// turns with the batches a short run sends: no worker thread (the crossing has its own rows).
import { errorFrames } from '../../actors/runners.ts';
import type { RunTypes } from '../../actors/runs.ts';
import type { Batch, ToHost } from '../../actors/runtime/protocol.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { Supervisor, type HostFactory } from '../../actors/runtime/supervisor.ts';
import { batch, chatRequest, chatResult, framesItem, runFrames } from './run-shapes.ts';
import { per, time, type Stage } from './timing.ts';

/** A subscriber that counts what it is written (ASCII frames: characters are bytes) and ends. */
class CountingSubscriber implements Subscriber {
  written = 0;
  dropped = false;
  private closed = false;
  private hooks: Array<() => void> = [];
  write(frames: string): void {
    this.written += frames.length;
  }
  end(): void {
    if (this.closed) return;
    this.closed = true;
    for (const h of this.hooks) h();
    this.hooks = [];
  }
  onClose(fn: () => void): void {
    if (this.closed) fn();
    else this.hooks.push(fn);
  }
}

const request = chatRequest(true);
const [meta, delta, done] = runFrames(request);

function supervisor(answer: (msg: ToHost, onBatch: (b: Batch) => void) => void, maxActiveRuns: number): Supervisor<RunTypes> {
  const factory: HostFactory = (_index, onBatch) => ({ send: (msg) => answer(msg, onBatch), terminate: async () => {}, ready: Promise.resolve() });
  return new Supervisor<RunTypes>({ hosts: 1, factory, errorFrames, maxActiveRuns, log: () => {} });
}

const start = (sup: Supervisor<RunTypes>, key: string, sub: Subscriber) => {
  const started = sup.start({ kind: 'chat', key, request, ifRunning: 'reject', label: request.provider, subscriber: sub, cancelWhenAlone: false });
  if (!started.ok) throw new Error(`the ledger's start was refused: ${started.message}`);
  return started.handle;
};

/**
 * A real Supervisor whose host answers every start as a short run does, each batch on a later turn: its
 * meta, then its delta and done with its end (the frames of run-shapes.ts, whatever the request).
 */
export function shortRunSupervisor(maxActiveRuns: number): Supervisor<RunTypes> {
  const result = chatResult(request);
  return supervisor((msg, onBatch) => {
    if (msg.t !== 'start') return;
    const { runId } = msg;
    setImmediate(() => {
      onBatch(batch(framesItem(runId, [meta!])));
      setImmediate(() => onBatch(batch(framesItem(runId, [delta!, done!]), { t: 'end', runId, result })));
    });
  }, maxActiveRuns);
}

/** µs of CPU per frames item: one batch with one delta frame for each of `runs` runs, one subscriber each. */
export async function supervisorFanOut(ops: number, runs = 64): Promise<Stage> {
  let onBatch: (b: Batch) => void = () => {};
  const sup = supervisor((_msg, ob) => void (onBatch = ob), runs);
  const runIds = Array.from({ length: runs }, (_, i) => start(sup, `chat-${i}`, new CountingSubscriber()).runId);
  const turnBatch = batch(...runIds.map((runId) => framesItem(runId, [delta!])));
  const s = await time(`supervisor: fan-out of a batch of ${runs} delta items`, () => onBatch(turnBatch), { ops: Math.max(10, Math.ceil(ops / runs)) });
  return { ...per(s, runs), name: 'supervisor: fan-out of one delta (onBatch, per item)', note: `a batch of ${runs} frames items for ${runs} runs, one subscriber each (counting what it is written); the SSE write has its own row` };
}
