// What the Idempotency-Key suites share: the header, the text a stream carried, and a whole completion
// sent with its retry while it runs.
import { randomUUID } from 'node:crypto';
import type { SseEvent, TestServer } from './server.ts';
import { waitFor } from './wait.ts';

export const keyed = (key: string) => ({ 'idempotency-key': key });

/** The text of a stream's deltas, joined. */
export const rebuilt = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');

/**
 * On a new chat, POSTs a keyed whole completion (`bodyFor` the chat) and, once the run has called the
 * provider (the body has it hold its answer back), the same request again: the retry meets the run
 * while it goes. `calls` is the provider's count before the first.
 */
export async function wholeWithRetry<B>(t: TestServer, bodyFor: (chatId: string) => B, providerCalls: () => number) {
  const chatId: string = (await t.call('POST', '/v1/chats', {})).body.chat.id;
  const key = randomUUID();
  const body = bodyFor(chatId);
  const calls = providerCalls();
  const [first, waiting] = await Promise.all([
    t.call('POST', '/v1/chat-completions', body, keyed(key)),
    waitFor(() => providerCalls() > calls, 10_000, 'the run to call the provider').then(() => t.call('POST', '/v1/chat-completions', body, keyed(key))),
  ]);
  return { chatId, key, body, calls, first, waiting };
}
