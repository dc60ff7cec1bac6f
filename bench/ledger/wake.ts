// The ledger's wake-up row for a start: what a thread's sleep and wake-up costs (epoll_wait returning,
// the scheduler switching the thread out and back in, libuv's loop phases), times the wake-ups a start
// makes in the service that its stages, each measured alone, did not make themselves.
//
// A stage that waits on another process (a statement, the upstream request) sleeps and is woken inside
// its own figure; `time` counts those (Stage.wakeUps). The service, at 500 starts a second, is idle
// between starts, so each of a start's events (the client's request, the start crossing to the actor
// thread, the upstream response, the frames crossing back, the client's close) wakes a thread that was
// asleep: the service's `wakeUpsPerStart` (measured.ts, or the bench's start-rate row) counts them all.
import { sum, time, type Stage } from './timing.ts';

/** µs of this process's CPU per sleep and wake-up: a 1 ms timer's turn less a setImmediate turn. */
export async function wakeUpCost(ops: number): Promise<{ us: number; asleep: Stage; busy: Stage }> {
  const asleep = await time('a 1 ms timer\'s turn (a sleep and a wake-up)', () => new Promise((r) => setTimeout(r, 1)), { ops });
  const busy = await time('a setImmediate turn (no sleep)', () => new Promise((r) => setImmediate(r)), { ops });
  const wakes = (asleep.wakeUps ?? 1) - (busy.wakeUps ?? 0);
  return { us: (asleep.cpuUs - busy.cpuUs) / Math.max(wakes, 0.5), asleep, busy };
}

/**
 * The row: the service's wake-ups per start (null: not measured) less those the stages made alone, at
 * the micro-benchmark's cost each. The difference has either sign: the service wakes for events no
 * stage stands for (its timers, a second read of a response), and, paced one start every 2 ms, the
 * stages each wake for their own event where in the service several share a turn (a batch of frames and
 * the client's close, an answer and the next start); a negative row takes those back.
 */
export async function wakeUpStage(measured: number | null, stages: Stage[], ops: number): Promise<Stage> {
  const { us, asleep } = await wakeUpCost(ops);
  const inStages = sum(stages, 'wakeUps');
  const name = 'event loop: the service\'s wake-ups beyond the stages\' own (or shared among them)';
  if (measured == null) return { name, cpuUs: 0, wallUs: 0, note: `not counted: no service measured in this run and no wakeUpsPerStart in bench/results.json; ${us.toFixed(1)} µs each` };
  const other = measured - inStages;
  return {
    name,
    cpuUs: other * us,
    wallUs: other * asleep.wallUs,
    wakeUps: other,
    note: `${measured.toFixed(3)} per start in the service less the ${inStages.toFixed(3)} the stages above made alone, `
      + `at ${us.toFixed(1)} µs each (a 1 ms timer's turn less a setImmediate turn, per wake-up counted)`,
  };
}
