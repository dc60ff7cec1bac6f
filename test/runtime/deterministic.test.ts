// Each run kind's machine, played twice with every source of time and chance in the process trapped
// (timers, clocks, random numbers, random ids): a run takes its time and ids from the world the
// runtime gives it, so it neither reads them elsewhere nor plays differently the second time.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { syncBuiltinESMExports } from 'node:module';
import { test } from 'node:test';
import { chatBehavior, type ChatRunRequest } from '../../actors/chat-run.ts';
import { searchBehavior, type SearchRunRequest } from '../../actors/search-run.ts';
import { titleBehavior } from '../../actors/title-run.ts';
import { TITLE_TIMEOUT_MS } from '../../src/chat/title.ts';
import type { ChatSummary, SearchDetail } from '../../src/base/types.ts';
import { call, fakeDeps, fakeTool, machine } from '../helpers/fake-io.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

/** Runs `play` with the process's timers, clocks and randomness replaced by functions that throw. */
function withoutTimeOrChance<T>(play: () => T): T {
  const g = globalThis as Record<string, unknown>;
  const saved = {
    setTimeout: g.setTimeout,
    setInterval: g.setInterval,
    setImmediate: g.setImmediate,
    Date: g.Date,
    now: performance.now,
    random: Math.random,
    uuid: crypto.randomUUID,
  };
  const trap = (what: string) => () => {
    throw new Error(`a run read ${what}`);
  };
  const RealDate = Date;
  class TrappedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) trap('the wall clock (new Date())')();
      super(...(args as [number]));
    }
    static override now = trap('Date.now()');
  }
  Object.assign(g, { setTimeout: trap('setTimeout'), setInterval: trap('setInterval'), setImmediate: trap('setImmediate'), Date: TrappedDate });
  performance.now = trap('performance.now()');
  Math.random = trap('Math.random()');
  crypto.randomUUID = trap('randomUUID()') as typeof crypto.randomUUID;
  syncBuiltinESMExports();
  try {
    return play();
  } finally {
    Object.assign(g, { setTimeout: saved.setTimeout, setInterval: saved.setInterval, setImmediate: saved.setImmediate, Date: saved.Date });
    performance.now = saved.now;
    Math.random = saved.random;
    crypto.randomUUID = saved.uuid;
    syncBuiltinESMExports();
  }
}

/** A played run as data: its frames, the commands it started and its result. */
const record = (m: { sink: { data: string; result: unknown }; commands: unknown[] }) => JSON.stringify({ frames: m.sink.data, commands: m.commands, result: m.sink.result });

/** Plays twice; both plays must end and be the same. */
function playsTheSame(play: () => string): string {
  const first = withoutTimeOrChance(play);
  assert.equal(withoutTimeOrChance(play), first);
  return first;
}

const chatReq: ChatRunRequest = { owner: ADMIN_USER_ID, chatId: 'chat-1', createChat: false, storeChat: true, callId: 'llm-1', provider: 'provider_a', model: 'm', messages: [{ role: 'user', content: 'hi' }], mode: 'stream' };
const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };

test('chat: a tool round, the hold released by its timer, the answer stored', () => {
  const out = playsTheSame(() => {
    const m = machine(chatBehavior, chatReq, fakeDeps({ tools: [fakeTool('web_search')] }));
    m.tell({ t: 'start' });
    m.tell({ t: 'prepared', runToken: 1 });
    m.tell({ t: 'text', round: 1, text: 'Let me look' });
    m.tell({ t: 'round_end', round: 1, end: { toolCalls: [call('web_search', { q: 'x' })], usage, finishReason: 'tool_calls', raw: null } });
    m.timers.time += 40;
    m.tell({ t: 'tool_done', round: 1, index: 0, output: 'found' });
    m.tell({ t: 'tool_stored', round: 1, index: 0 });
    m.tell({ t: 'text', round: 2, text: 'Found it' });
    m.timers.fire(250);
    m.tell({ t: 'round_end', round: 2, end: { toolCalls: [], usage, finishReason: 'stop', raw: { id: 'r' } } });
    m.tell({ t: 'answer_stored' });
    assert.equal(m.sink.result?.ok, true);
    return record(m);
  });
  assert.match(out, /"toolCallId\\":\\"id-1\\"/, 'the tool call\'s id is the world\'s');
});

test('search: both engines, then the run stored', () => {
  const req = { searchId: 'search-1', endpoint: { baseUrl: 'http://engine', apiKey: 'k' }, query: 'q' } as SearchRunRequest;
  playsTheSame(() => {
    const m = machine(searchBehavior, req, fakeDeps());
    m.tell({ t: 'start' });
    m.tell({ t: 'answer_done', outcome: { ok: true, value: { answerText: 'A', answerRequestId: 'r2', answerCitations: [] } } });
    m.timers.time += 900;
    m.tell({ t: 'search_done', outcome: { ok: true, value: { requestId: 'r1', results: [] } } });
    m.tell({ t: 'saved', detail: { id: 'search-1' } as SearchDetail });
    assert.equal(m.sink.result?.ok, true);
    return record(m);
  });
});

test('title: the call opened, the model answered, the title set; and one that times out', () => {
  const chat = { id: 'chat-1', title: 'Tides' } as ChatSummary;
  playsTheSame(() => {
    const m = machine(titleBehavior, { owner: ADMIN_USER_ID, chatId: 'chat-1', content: 'how do tides work?' }, fakeDeps());
    m.tell({ t: 'start' });
    m.tell({ t: 'chat_read', chat: { id: 'chat-1', title: null } as ChatSummary });
    m.tell({ t: 'call_started', callId: 'llm-t' });
    m.tell({ t: 'generated', text: 'Tides', usage: null });
    m.tell({ t: 'call_finished' });
    m.tell({ t: 'titled', chat });
    assert.equal(m.sink.result?.ok, true);
    const slow = machine(titleBehavior, { owner: ADMIN_USER_ID, chatId: 'chat-2', content: 'x' }, fakeDeps());
    slow.tell({ t: 'start' });
    slow.tell({ t: 'chat_read', chat: { id: 'chat-2', title: '' } as ChatSummary });
    slow.tell({ t: 'call_started', callId: 'llm-u' });
    slow.timers.fire(TITLE_TIMEOUT_MS);
    slow.tell({ t: 'failed', error: new Error('aborted') });
    slow.tell({ t: 'call_failed' });
    assert.equal(slow.sink.result?.ok, false);
    return record(m) + record(slow);
  });
});
