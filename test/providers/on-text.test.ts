// ProviderSession.round with a text callback: every provider hands its text over synchronously, in
// order, and yields only round_end, streamed and whole.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ProviderEvent } from '../../src/providers/types.ts';
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
    test(`${name} (${stream ? 'streamed' : 'whole'}): text to the callback, only round_end yielded`, async () => {
      const session = get(name).startSession(request({ reply: 'one two three', deltas: 3 }, { stream }));
      const texts: string[] = [];
      const yielded: ProviderEvent['type'][] = [];
      for await (const ev of session.round(null, (t) => texts.push(t))) yielded.push(ev.type);
      assert.deepEqual(yielded, ['round_end']);
      assert.equal(texts.join(''), 'one two three');
      assert.equal(texts.length, stream ? 3 : 1);
    });
  }
}
