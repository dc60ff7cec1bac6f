// Start storm: many simultaneous persisted starts on one chatId must yield exactly one 200 stream
// and 409 for all the others (the supervisor registers a run synchronously, before any await).
import { openStream, parseBlock, type Endpoint } from './client.ts';

export interface StormResult {
  chats: number;
  startsPerChat: number;
  ok200: number;
  conflict409: number;
  other: Record<string, number>;
  /** Chats with exactly one 200 whose stream then ended with `done`. */
  chatsWithExactlyOneRun: number;
}

function request(ep: Endpoint, method: string, path: string, body: string): Promise<{ status: number; body: string; done: boolean }> {
  return new Promise((resolve) => {
    let status = 0;
    let text = '';
    let done = false;
    openStream(ep, method, path, {}, body, {
      onHead: (s) => void (status = s),
      onEvent: (block) => {
        if (parseBlock(block).event === 'done') done = true;
      },
      onBody: (_s, b) => void (text = b),
      onClose: () => resolve({ status, body: text, done }),
    });
  });
}

export async function runStorm(ep: Endpoint, chats: number, starts: number, deltas: number, rate: number): Promise<StormResult> {
  const ids: string[] = [];
  for (let i = 0; i < chats; i++) {
    const r = await request(ep, 'POST', '/v1/chats', JSON.stringify({ title: `storm ${i}`, provider: 'provider_c', model: 'm' }));
    const id = (JSON.parse(r.body) as { chat?: { id?: string } }).chat?.id;
    if (!id) throw new Error(`cannot create a chat for the storm: ${r.status} ${r.body.slice(0, 200)}`);
    ids.push(id);
  }
  const sim = `SIM ${JSON.stringify({ deltas, rate, stamp: true })}`;
  const result: StormResult = { chats, startsPerChat: starts, ok200: 0, conflict409: 0, other: {}, chatsWithExactlyOneRun: 0 };
  // All starts of all chats are written in the same event-loop turn: as simultaneous as one
  // client process can make them.
  await Promise.all(
    ids.map(async (chatId) => {
      const body = JSON.stringify({ chatId, provider: 'provider_c', model: 'm', persist: true, enabledTools: [], messages: [{ role: 'user', content: `storm\n${sim}` }] });
      const answers = await Promise.all(Array.from({ length: starts }, () => request(ep, 'POST', '/v1/chat-completions/stream', body)));
      let ok = 0;
      let okDone = 0;
      for (const a of answers) {
        if (a.status === 200) {
          ok++;
          if (a.done) okDone++;
        } else if (a.status === 409) result.conflict409++;
        else result.other[String(a.status)] = (result.other[String(a.status)] ?? 0) + 1;
      }
      result.ok200 += ok;
      if (ok === 1 && okDone === 1) result.chatsWithExactlyOneRun++;
    }),
  );
  return result;
}
