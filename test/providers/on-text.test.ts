// ProviderSession.round: every provider hands its text to the callback synchronously, in order, before
// the round resolves with its end, streamed and whole.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { request, setup, type Sim } from './helpers.ts';

let sim: Sim;
let get: Awaited<ReturnType<typeof setup>>['get'];
before(async () => {
  const s = await setup();
  sim = s.sim;
  get = s.get;
});
after(() => sim.close());

for (const name of ['provider_a', 'provider_b', 'provider_c', 'provider_d'] as const) {
  for (const stream of [true, false]) {
    test(`${name} (${stream ? 'streamed' : 'whole'}): text to the callback, then the round's end`, async () => {
      const session = get(name).startSession(request({ reply: 'one two three', deltas: 3 }, { stream }));
      const texts: string[] = [];
      let textAfterEnd = false;
      let resolved = false;
      const end = await session.round(null, (t) => {
        if (resolved) textAfterEnd = true;
        texts.push(t);
      });
      resolved = true;
      assert.deepEqual(end.toolCalls, []);
      assert.equal(textAfterEnd, false);
      assert.equal(texts.join(''), 'one two three');
      assert.equal(texts.length, stream ? 3 : 1);
    });
  }
}
