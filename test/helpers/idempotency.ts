// What the Idempotency-Key suites share: the header, the text a stream carried, and a whole completion
// sent with its retry while it runs.
import { randomUUID } from 'node:crypto';
import type { SseEvent, TestServer } from './server.ts';
import { metric } from './drain.ts';
import { gateName, waitFor } from './wait.ts';

export const keyed = (key: string) => ({ 'idempotency-key': key });

/** The text of a stream's deltas, joined. */
export const rebuilt = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');

/**
 * On a new chat, POSTs a keyed whole completion (`bodyFor` the chat and a simulator gate its answer is
 * to wait at) and, once the run has called the provider (held at the gate), the same request again.
 * Resolves once the retry has found the key taken and waits (css_idempotent_replays_total), with both
 * requests pending: the caller opens `gate`. `calls` is the provider's count before.
 */
export async function wholeRetryWaiting<B>(t: TestServer, bodyFor: (chatId: string, gate: string) => B, providerCalls: () => number) {
  const chatId: string = (await t.call('POST', '/v1/chats', {})).body.chat.id;
  const key = randomUUID();
  const gate = gateName('retry');
  const body = bodyFor(chatId, gate);
  const calls = providerCalls();
  const replays = () => metric(t.url, 'css_idempotent_replays_total{mode="whole"}');
  const replayed = await replays();
  const pending = t.call('POST', '/v1/chat-completions', body, keyed(key));
  await waitFor(() => t.sim.heldAt(gate) === 1, 10_000, 'the run to call the provider');
  const retried = t.call('POST', '/v1/chat-completions', body, keyed(key));
  await waitFor(async () => (await replays()) > replayed, 10_000, 'the retry to wait for the run');
  return { chatId, key, gate, body, calls, pending, retried };
}

/**
 * wholeRetryWaiting, then the gate opened and both answers read: the retry meets the run while it
 * goes however slow the machine.
 */
export async function wholeWithRetry<B>(t: TestServer, bodyFor: (chatId: string, gate: string) => B, providerCalls: () => number) {
  const { pending, retried, ...sent } = await wholeRetryWaiting(t, bodyFor, providerCalls);
  t.sim.openGate(sent.gate);
  const [first, waiting] = await Promise.all([pending, retried]);
  return { ...sent, first, waiting };
}
