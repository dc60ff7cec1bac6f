// A background response whose start waits its turn in the admission's start queue (src/admission/) reads
// `queued`, through the official `openai` SDK, until its run starts, then `in_progress`, then its end. The
// queue is filled as test/api/admission.test.ts fills it: a lock on `chats` held from another connection keeps
// each new chat's first statement waiting, so the limit's worth of starts stay in flight and the next one
// waits. One cancelled while it waits answers `cancelled` (docs/clients.md says so; nothing pinned it). Postgres
// only: the lock needs a second connection, which the embedded database has not.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LIMIT_DEFAULTS } from '../../src/admission/limit.ts';
import { NEEDS_POSTGRES, serverOnScratchPostgres, sim, waitFor } from '../helpers/server.ts';
import { openaiClient, readAll } from '../helpers/openai.ts';
import { ADMIN_TOKEN } from '../helpers/users.ts';
import { gauge, lockChats } from '../helpers/start-queue.ts';
import { gateName } from '../helpers/wait.ts';

const AUTH = { authorization: `Bearer ${ADMIN_TOKEN}` };

describe('a background response waiting for its start reads queued', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres({ ADMIN_TOKEN });

  it('queued while its start waits its turn, in_progress once its run started, then completed', async () => {
    const t = scratch.server();
    const ai = openaiClient(t.url, ADMIN_TOKEN);
    const limit = LIMIT_DEFAULTS.initial;
    assert.equal(await gauge(t, 'css_start_limit'), limit);
    const lock = await lockChats(scratch.url());
    try {
      const body = { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas: 2 }) }] };
      const inFlight = Array.from({ length: limit }, () => t.stream('/v1/chat-completions/stream', body, { headers: AUTH }));
      await waitFor(async () => (await gauge(t, 'css_start_backlog')) === limit, 20_000, `${limit} starts in flight, held by the lock`);

      const gate = gateName();
      const bg = await ai.responses.create({ model: 'provider_c/sim-c-large', input: sim({ reply: 'waited its turn', deltas: 2, gate, gateAfter: 1 }), background: true });
      assert.equal(bg.status, 'queued');
      assert.equal(await gauge(t, 'css_starts_waiting'), 1);
      assert.equal((await ai.responses.retrieve(bg.id)).status, 'queued');
      // A reader that attaches while it waits gets every event once it runs.
      const reading = readAll(await ai.responses.retrieve(bg.id, { stream: true }));
      // Another cancelled while it waits: its stop goes behind its start, and the cancel answers once it ended.
      const doomedGate = gateName();
      const doomed = await ai.responses.create({ model: 'provider_c/sim-c-large', input: sim({ reply: 'never told', deltas: 2, gate: doomedGate, gateAfter: 1 }), background: true });
      assert.equal((await ai.responses.retrieve(doomed.id)).status, 'queued');
      const cancelling = ai.responses.cancel(doomed.id);

      await lock.release();
      assert.equal((await cancelling).status, 'cancelled');
      assert.equal((await ai.responses.retrieve(doomed.id)).status, 'cancelled');
      t.sim.openGate(doomedGate);
      await waitFor(() => t.sim.heldAt(gate) > 0, 20_000, 'its run started and holds at the gate');
      await waitFor(async () => (await ai.responses.retrieve(bg.id)).status === 'in_progress', 10_000, 'it reads in_progress while its run goes');
      t.sim.openGate(gate);
      const events = await reading;
      assert.deepEqual(events.map((e) => e.sequence_number), events.map((_, i) => i));
      assert.equal(events.at(-1)!.type, 'response.completed');
      await waitFor(async () => (await ai.responses.retrieve(bg.id)).status === 'completed', 10_000, 'its end stored');
      assert.equal((await ai.responses.retrieve(bg.id)).output_text, 'waited its turn');
      const ends = (await Promise.all(inFlight)).map((s) => s.events.at(-1)?.event);
      assert.deepEqual(ends, ends.map(() => 'done'));
    } finally {
      await lock.close();
    }
  });
});
