// A thread crossing: `payload` posted from a worker to this thread, one message each, the CPU of both
// threads per message (they are one process). The payloads are what the actor runtime really posts
// (run-shapes.ts): the supervisor's starts to an actor thread (hosts.ts `batched`: one array per
// event-loop turn) and the actor thread's outbox batches back (actors/runtime/protocol.ts `Batch`).
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { batch, chatRequest, chatResult, framesItem, runFrames, startMessage } from './run-shapes.ts';
import { time, type Stage } from './timing.ts';

export async function crossing(name: string, payload: unknown, note: string): Promise<Stage> {
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    parentPort.on('message', (n) => { for (let i = 0; i < n; i++) parentPort.postMessage(workerData); });`;
  const w = new Worker(code, { eval: true, workerData: payload });
  const perRound = 1000;
  let left = 0;
  let done: () => void = () => {};
  w.on('message', () => void (--left === 0 && done()));
  const s = await time(name, () => new Promise<void>((resolve) => {
    left = perRound;
    done = resolve;
    w.postMessage(perRound);
  }), { ops: 20, warm: 5 });
  await w.terminate();
  return { ...s, cpuUs: s.cpuUs / perRound, wallUs: s.wallUs / perRound, note };
}

/** The crossings of one persisted start: its start message to the actor thread, its frames and end back. */
export async function startCrossings(): Promise<Stage[]> {
  const runId = randomUUID();
  const request = chatRequest(true);
  return [
    await crossing('thread crossing: the start to the actor thread', [startMessage(runId, request)],
      'a turn\'s array with one start message (a ChatRunRequest as the route builds it); posted worker → main here, the other way in the service'),
    await crossing('thread crossing: the start\'s frames and end back (meta, delta, done)', batch(framesItem(runId, runFrames(request)), { t: 'end', runId, result: chatResult(request) }),
      'one Batch: a frames item and the end; a short run\'s frames often share one'),
  ];
}

/**
 * A delta's share of one outbox batch: the outbox sends at most one batch a millisecond
 * (actors/runtime/outbox.ts), so under the bench's delta load a batch carries `items` deltas of as many
 * runs (rate × streams ÷ 1,000).
 */
export async function deltaCrossing(items: number): Promise<Stage> {
  const [, delta] = runFrames(chatRequest(true));
  const n = Math.max(1, Math.round(items));
  const s = await crossing('thread crossing: one delta\'s share of a batch, worker → main (both threads)', batch(...Array.from({ length: n }, () => framesItem(randomUUID(), [delta!]))),
    `a Batch of ${n} frames items of ${n} runs, the millisecond's deltas under the bench's load (the outbox's 1 ms gap)`);
  return { ...s, cpuUs: s.cpuUs / n, wallUs: s.wallUs / n };
}
