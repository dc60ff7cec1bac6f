// A takeover's chat run (src/service/takeover.ts) without I/O: it resumes from a lost run's checkpointed
// text, which is its first delta and the trailing assistant turn the provider continues; its answer
// is that text and the continuation; a failure keeps the text as the lost run's interrupted answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { chatBehavior, type ChatRunRequest } from '../../actors/chat-run.ts';
import { ProviderError, type CompletionRequest, type ProviderAdapter } from '../../src/providers/types.ts';
import { fakeDeps, machine } from '../helpers/fake-io.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const resumed: ChatRunRequest = { owner: ADMIN_USER_ID,
  chatId: 'chat-1',
  createChat: false,
  storeChat: true,
  callId: 'llm-2',
  provider: 'provider_b',
  model: 'model-b',
  messages: [{ role: 'user', content: 'tell me' }],
  mode: 'stream',
  resume: { text: 'The first half', runToken: 7 },
};

/** A resumed run, started, with the provider request it made. */
function start() {
  const deps = fakeDeps({ provider: 'provider_b' });
  const sent: CompletionRequest[] = [];
  const adapter = deps.providers.get('provider_b')!;
  deps.providers.set('provider_b', { ...adapter, startSession: (req) => (sent.push(req), adapter.startSession(req)) } as ProviderAdapter);
  const m = machine(chatBehavior, resumed, deps);
  m.tell({ t: 'start' });
  m.tell({ t: 'prepared', runToken: 7 });
  return { m, sent };
}

test('a resumed run replays the lost text first, sends it as the trailing assistant turn, and stores it with the continuation', () => {
  const { m, sent } = start();
  assert.deepEqual(m.sink.events().slice(0, 2).map(([e, d]) => [e, d.text]), [['meta', undefined], ['delta', 'The first half']]);
  assert.deepEqual(sent[0]!.messages.at(-1), { role: 'assistant', content: 'The first half' });
  m.tell({ t: 'text', round: 1, text: ' and the rest.' });
  m.tell({ t: 'round_end', round: 1, end: { toolCalls: [], usage: null, finishReason: 'end_turn', raw: null } });
  assert.deepEqual(m.sent('store_answer').map((c) => [c.text, c.runToken, c.callId]), [['The first half and the rest.', 7, 'llm-2']]);
  m.tell({ t: 'answer_stored' });
  assert.deepEqual(m.sink.events().at(-1), ['done', { type: 'done', text: 'The first half and the rest.' }]);
});

test('a resumed run that fails keeps its text as the lost run’s interrupted answer', () => {
  const { m } = start();
  m.tell({ t: 'text', round: 1, text: ' and' });
  m.tell({ t: 'round_failed', round: 1, error: new ProviderError('provider_b is overloaded') });
  const [store] = m.sent('store_interrupted');
  assert.equal(store?.text, 'The first half and');
  assert.equal(store?.reason, 'instance lost');
  assert.match(store!.error, /^instance lost: the continuation by a peer failed: /);
  m.tell({ t: 'interrupted_stored', error: null });
  assert.equal(m.sink.events().at(-1)?.[0], 'error');
});
