// A thread crossing: `payload` posted from a worker to this thread, one message each, the CPU of both
// threads per message (they are one process). The actor runtime posts starts to its thread and frames
// back; what it posts is its own (actors/**), so the payloads here are representative shapes.
import { Worker } from 'node:worker_threads';
import { time, type Stage } from './timing.ts';

export async function crossing(name: string, payload: unknown, note: string): Promise<Stage> {
  const code = `const { parentPort, workerData } = require('node:worker_threads');
    parentPort.on('message', (n) => { for (let i = 0; i < n; i++) parentPort.postMessage(workerData); });`;
  const w = new Worker(code, { eval: true, workerData: payload });
  const batch = 1000;
  let left = 0;
  let done: () => void = () => {};
  w.on('message', () => void (--left === 0 && done()));
  const s = await time(name, () => new Promise<void>((resolve) => {
    left = batch;
    done = resolve;
    w.postMessage(batch);
  }), { ops: 20, warm: 5 });
  await w.terminate();
  return { ...s, cpuUs: s.cpuUs / batch, wallUs: s.wallUs / batch, note };
}
