// A thread crossing: `payload` posted from a worker to this thread, one message each, the CPU of both
// threads per message (they are one process). The payloads are what the actor runtime really posts
// (run-shapes.ts): the supervisor's starts to an actor thread (hosts.ts `batched`: one array per
// event-loop turn) and the actor thread's outbox batches back (actors/runtime/protocol.ts `Batch`).
import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { batch, chatRequest, chatResult, framesItem, runFrames, startMessage } from './run-shapes.ts';
import { per, time, type Stage } from './timing.ts';

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
  return { ...per(s, perRound), note };
}

/**
 * The crossings of one persisted start, paced (one start every 2 ms, as the start-rate row): its start
 * message to a sleeping thread and its frames and end back to a sleeping main thread, as one round trip
 * (the worker answers each start with the start's batch). Both threads' CPU, their wake-ups included.
 */
export async function startCrossings(): Promise<Stage> {
  const runId = randomUUID();
  const request = chatRequest(true);
  const reply = batch(framesItem(runId, runFrames(request)), { t: 'end', runId, result: chatResult(request) });
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    parentPort.on('message', () => parentPort.postMessage(workerData));`;
  const w = new Worker(code, { eval: true, workerData: reply });
  let done: () => void = () => {};
  w.on('message', () => done());
  const start = [startMessage(runId, request)];
  const s = await time('thread crossings of a start: its start message to the actor thread, its frames and end back', () => new Promise<void>((resolve) => {
    done = resolve;
    w.postMessage(start);
  }), { ops: 1000, paced: true });
  await w.terminate();
  return { ...s, note: 'a turn\'s array with one start message (a ChatRunRequest as the route builds it) to a sleeping worker, and one Batch back (a frames item: meta, delta, done; the end) to this sleeping thread' };
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
  return per(s, n);
}
