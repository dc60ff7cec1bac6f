// One terminal `error` event per run kind, in the spec's shape for the kind (a chat stream's
// `{ type: 'error', message }`, a search stream's `{ message }`), whoever ends the run: the run itself,
// the runtime after a throw it could not record, or the supervisor when the run's host dies or its
// replay cannot be built.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatBehavior, type ChatRunRequest } from '../../actors/chat-run.ts';
import { errorFrames } from '../../actors/runners.ts';
import type { RunKind, RunTypes } from '../../actors/runs.ts';
import type { Batch, ToHost } from '../../actors/runtime/protocol.ts';
import { Supervisor, type HostFactory } from '../../actors/runtime/supervisor.ts';
import { searchBehavior, type SearchMsg, type SearchRunRequest } from '../../actors/search-run.ts';
import { FakeSubscriber } from './fake.ts';
import { fakeDeps, machine } from '../helpers/fake-io.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const chatReq: ChatRunRequest = { owner: ADMIN_USER_ID, chatId: null, createChat: false, storeChat: false, callId: null, provider: 'provider_a', model: 'm', messages: [{ role: 'user', content: 'hi' }], mode: 'stream' };
const searchReq = { owner: ADMIN_USER_ID, searchId: 'search-1', endpoint: { baseUrl: 'http://engine', apiKey: 'k' }, query: 'q' } as SearchRunRequest;
const requests = { chat: chatReq, search: searchReq, title: { owner: ADMIN_USER_ID, chatId: 'chat-1', content: 'hi' } } satisfies { [K in RunKind]: RunTypes[K]['request'] };

/** The spec's shape of each kind's terminal error (the title run has no stream: the search's shape). */
const shapes: { [K in RunKind]: (message: string) => Record<string, unknown> } = {
  chat: (message) => ({ type: 'error', message }),
  search: (message) => ({ message }),
  title: (message) => ({ message }),
};

/** A supervisor on one host that takes starts and attaches and answers nothing unless told to. */
function supervisorOnSilentHost() {
  const host: { sent: ToHost[]; onBatch: (b: Batch) => void; onExit: (err: Error) => void } = { sent: [], onBatch: () => {}, onExit: () => {} };
  const factory: HostFactory = (_index, onBatch, onExit) => {
    Object.assign(host, { onBatch, onExit });
    return { send: (msg) => host.sent.push(msg), terminate: async () => {}, ready: Promise.resolve() };
  };
  const sup = new Supervisor<RunTypes>({ hosts: 1, factory, errorFrames, maxActiveRuns: 10, log: () => {} });
  return { sup, host };
}

for (const kind of ['chat', 'search', 'title'] as const) {
  test(`a ${kind} run whose host dies ends with the ${kind}'s error shape`, async () => {
    const { sup, host } = supervisorOnSilentHost();
    const sub = new FakeSubscriber();
    const started = sup.start({ kind, key: 'k', request: requests[kind], ifRunning: 'reject', subscriber: sub });
    assert.ok(started.ok);
    host.onExit(new Error('worker exited with code 1'));
    const message = 'run host failed: worker exited with code 1';
    assert.deepEqual(sub.events(), [['error', shapes[kind](message)]]);
    assert.deepEqual(await started.handle.result, { ok: false, outcome: 'internal', message });
  });
}

test('a search attach whose replay fails ends that subscriber with the search\'s error shape', () => {
  const { sup, host } = supervisorOnSilentHost();
  assert.ok(sup.start({ kind: 'search', key: 's', request: searchReq, ifRunning: 'reject' }).ok);
  const sub = new FakeSubscriber();
  assert.equal(sup.attachNow('search', 's', sub), true);
  const attach = host.sent.find((m): m is Extract<ToHost, { t: 'attach' }> => m.t === 'attach')!;
  host.onBatch({ t: 'batch', items: [{ t: 'replay_failed', runId: attach.runId, subId: attach.subId, message: 'replay failed: boom' }] });
  assert.deepEqual(sub.events(), [['error', { message: 'replay failed: boom' }]]);
  assert.equal(sub.ended, true);
});

test('a run whose failure could not be recorded ends with its own kind\'s shape', () => {
  // The search run records nothing on a throw (its crashed() rethrows): the runtime ends it.
  const search = machine(searchBehavior, searchReq, fakeDeps());
  search.tell({ t: 'start' });
  search.tell({ t: 'search_done' } as SearchMsg);
  assert.equal(search.sink.names().at(-1), 'error');
  const [, data] = search.sink.events().at(-1)!;
  assert.deepEqual(Object.keys(data), ['message'], 'a search stream\'s error has no `type`');
  assert.deepEqual(search.sink.result && !search.sink.result.ok && search.sink.result.outcome, 'internal');

  const chat = machine(chatBehavior, chatReq, fakeDeps());
  chat.tell({ t: 'start' });
  chat.tell({ t: 'prepared', runToken: null });
  chat.tell({ t: 'round_failed', round: 1, error: new Error('provider down') });
  assert.deepEqual(chat.sink.events().at(-1), ['error', { type: 'error', message: 'provider down' }]);
});
