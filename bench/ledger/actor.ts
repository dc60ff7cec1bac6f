// The actor's rows of the ledger: a whole chat run through the real actor on its thread, and the
// mailbox path of one delta. No I/O: every command is answered at once, so the database, the provider
// and the thread crossing stay in their own rows.
import { executeChat } from '../../actors/chat-io.ts';
import type { ChatCommand, ChatMsg, ChatRunRequest } from '../../actors/chat-protocol.ts';
import { chatBehavior } from '../../actors/chat-run.ts';
import { defineRun, type RunHandle, type Tell } from '../../actors/runtime/actor.ts';
import { Outbox } from '../../actors/runtime/outbox.ts';
import { batchItems, type RunResult } from '../../actors/runtime/protocol.ts';
import type { ProviderSession } from '../../src/providers/types.ts';
import type { RunDeps } from '../../src/domain/run-deps.ts';
import { fakeDeps } from '../../test/helpers/fake-deps.ts';
import { chatRequest, providerC, ROUND_END, TEXT } from './run-shapes.ts';
import { simBase } from './upstream.ts';
import { steadyWindow, time, type Stage } from './timing.ts';

/**
 * What each command's real executor (chat-io.ts) answers, at once. A round is the real executor's,
 * on a session that hands its one text to the round's callback and resolves with the round's end.
 */
function answerAtOnce(cmd: ChatCommand, deps: RunDeps, tell: Tell<ChatMsg>, run: RunHandle): Promise<ChatMsg> {
  switch (cmd.c) {
    case 'prepare':
      return Promise.resolve({ t: 'prepared', runToken: cmd.req.storeChat ? 1 : null });
    case 'round':
      return executeChat(cmd, deps, tell, run);
    case 'store_answer':
      return Promise.resolve({ t: 'answer_stored' });
    default:
      return Promise.reject(new Error(`the ledger's one-delta run does not expect a ${cmd.c} command`));
  }
}

const session: ProviderSession = {
  round: (_results, onText) => {
    onText(TEXT);
    return Promise.resolve(ROUND_END);
  },
};

/** µs of CPU per chat run from its start to its end in the outbox's batch (the batches are dropped). */
export async function actorStart(persist: boolean, ops: number): Promise<Stage> {
  const run = defineRun({ ...chatBehavior, execute: answerAtOnce });
  const deps = fakeDeps({ provider: 'provider_c', session });
  const request: ChatRunRequest = chatRequest(persist);
  let ended: (result: RunResult) => void = () => {};
  const outbox = new Outbox((b) => {
    for (const item of batchItems(b)) if (item.t === 'end') ended(item.result);
  });
  const s = await time(`actor: a whole chat run, ${persist ? 'persisted' : 'unpersisted'}`, async (i) => {
    const result = await new Promise<RunResult>((resolve) => {
      ended = resolve;
      run.spawn(`run-${i}`, request, deps, outbox).tell({ t: 'start' });
    });
    if (!result.ok) throw new Error(`the ledger's run failed: ${result.message}`);
  }, { ops, paced: true });
  const steps = persist ? 'prepare, round, store_answer' : 'prepare, round';
  return {
    ...s,
    note: `the real Actor and chatBehavior, commands (${steps}) answered at once: mailbox, receive, session set-up, text gate, event buffer, `
      + 'frames (meta, delta, done), the outbox\'s items and its one flush (a turn), the promises of perform; not the I/O (own rows)',
  };
}

/**
 * The actor thread's part of a relayed delta, whole: `streams` real chat runs (the actor, chatBehavior,
 * the real executor's round) on the service's provider_c adapter and fetch, each streaming from the
 * upstream process at `rate` chunks a second as the simulator answers, their outbox batches encoded and
 * dropped (the crossing is its own row). Read over `windowMs` while every stream is open: the socket
 * read, undici's parse, the PushBody, SseFrames, the chunk's JSON, the adapter, the mailbox, the text
 * gate, the delta frame and the outbox, per delta, with the caches as 1,000 streams leave them.
 */
export async function actorThreadDelta(upstream: { port: number }, other: () => Promise<() => Promise<number>>, o: { streams: number; rate: number; windowMs: number }): Promise<Stage & { units: number }> {
  const seconds = Math.ceil((o.windowMs + 8000) / 1000);
  const adapter = providerC(simBase(upstream.port, o.rate * seconds, o.rate));
  const deps = { ...fakeDeps(), providers: new Map([[adapter.name, adapter]]) };
  const run = defineRun({ ...chatBehavior, execute: answerAtOnce });
  let events = 0;
  // Runs that have sent frames, until all have (then every stream is open).
  const heard = new Set<string>();
  let allOpen: () => void = () => {};
  const opened = new Promise<void>((resolve) => (allOpen = resolve));
  const ended = new Map<string, (r: RunResult) => void>();
  // The entries read in place, as the supervisor reads them (no object per item in the measured window).
  const outbox = new Outbox(({ items: e }) => {
    for (let i = 0; i < e.length; i++) {
      const entry = e[i]!;
      if (typeof entry === 'object') {
        if (entry.t === 'end') ended.get(entry.runId)!(entry.result);
        continue;
      }
      events += e[i + 2] as number; // a frames item: runId, data, events
      if (heard.size < o.streams && !heard.has(entry as string) && heard.add(entry as string).size === o.streams) allOpen();
      i += 2;
    }
  });
  const ends = Array.from({ length: o.streams }, (_, i) => {
    const runId = `run-${i}`;
    const end = new Promise<RunResult>((resolve) => ended.set(runId, resolve));
    run.spawn(runId, chatRequest(true), deps, outbox).tell({ t: 'start' });
    return end;
  });
  await opened;
  const s = await steadyWindow(o.windowMs, () => events, other);
  const failed = (await Promise.all(ends)).filter((r) => !r.ok);
  if (failed.length) throw new Error(`${failed.length} of the ledger's streaming runs failed: ${(failed[0] as { message: string }).message}`);
  return s;
}

