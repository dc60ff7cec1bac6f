// Micro-benchmark of the delta hot path, old against new, in one process (`node --import tsx
// bench/mailbox.ts`). Old: the provider's text callback was the round's TextGate.push, which called
// the actor's emitDelta directly (replicated here as it was before the mailbox). New: the callback
// pushes {t:'text'} into the chat actor's mailbox, which drains it through the chat run's receive
// into the same TextGate and emitDelta. Both write to a real Outbox whose batches are dropped.
// Prints ns per delta, the best of alternating trials (on a shared machine the best is the least
// disturbed); it asserts nothing. The ledger (bench/ledger/actor.ts) measures the new path with newPath.
import { chatBehavior } from '../actors/chat-run.ts';
import { Actor } from '../actors/runtime/actor.ts';
import { EventBuffer } from '../actors/runtime/event-buffer.ts';
import { deltaFrame } from '../actors/runtime/frame.ts';
import { Outbox } from '../actors/runtime/outbox.ts';
import type { ChatRunRequest } from '../actors/chat-run.ts';
import { fakeDeps } from '../test/helpers/fake-deps.ts';

const DELTAS = Number(process.env.DELTAS ?? 200_000);
/** Deltas per event-loop turn (one outbox flush each), as on a loaded actor thread. */
export const PER_TURN = 64;
const TRIALS = Number(process.env.TRIALS ?? 15);
export const turn = () => new Promise<void>((r) => setImmediate(r));

/** The pre-mailbox path: gate.push (bound) → ctx.emitDelta → buffer + outbox. */
function oldPath(outbox: Outbox): (text: string) => void {
  const buffer = new EventBuffer();
  const ctx = {
    finished: false,
    emitDelta(text: string) {
      if (this.finished || text.length === 0) return;
      buffer.appendText(text);
      outbox.frames('run-old', deltaFrame(text));
    },
  };
  const gate = {
    holding: false,
    push: (text: string): void => {
      if (!gate.holding) ctx.emitDelta(text);
    },
  };
  return gate.push;
}

const request: ChatRunRequest = { chatId: null, createChat: false, storeChat: false, callId: null, provider: 'provider_b', model: 'm', messages: [{ role: 'user', content: 'hi' }], mode: 'stream' };

/** The mailbox path: the callback chat-io.ts hands the provider, into a chat actor that is streaming. */
export function newPath(outbox: Outbox, runId = 'run-new'): (text: string) => void {
  const behavior = { ...chatBehavior, execute: () => new Promise<never>(() => {}) };
  const actor = new Actor(runId, behavior, request, fakeDeps({ provider: 'provider_b' }), outbox, { timers: { set: () => 0, clear: () => {}, now: () => 0 }, newId: () => 'id' });
  actor.tell({ t: 'start' });
  const round = 1;
  return (text) => actor.tell({ t: 'text', round, text });
}

async function trial(make: (o: Outbox) => (text: string) => void): Promise<number> {
  const outbox = new Outbox(() => {});
  const push = make(outbox);
  const start = process.hrtime.bigint();
  for (let i = 0; i < DELTAS; i += PER_TURN) {
    for (let j = 0; j < PER_TURN; j++) push('tok ');
    await turn();
  }
  return Number(process.hrtime.bigint() - start) / DELTAS;
}

if (process.argv[1] === import.meta.filename) {
  const best = (xs: number[]) => Math.min(...xs);
  const old: number[] = [];
  const neu: number[] = [];
  await trial(oldPath);
  await trial(newPath);
  for (let t = 0; t < TRIALS; t++) {
    old.push(await trial(oldPath));
    neu.push(await trial(newPath));
  }
  console.log(`delta path, ${DELTAS} deltas × ${TRIALS} trials, ${PER_TURN} per event-loop turn (ns per delta, including the turn's flush)`);
  console.log(`  old (direct emit):  ${best(old).toFixed(0)}`);
  console.log(`  new (mailbox):      ${best(neu).toFixed(0)}`);
  console.log(`  difference:         ${(best(neu) - best(old)).toFixed(0)} ns per delta`);
}
