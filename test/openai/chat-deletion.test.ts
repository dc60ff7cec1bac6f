// A stored response is a turn of its chat and goes with it (sql/022_openai_response_ends.sql): once the chat
// is deleted (DELETE /v1/chats/{id}), its responses read as 404 through the official `openai` SDK, whether
// they had ended or were still running, and no continuation can name them; another chat's stay, a chat begun
// from one of its earlier turns with the history it inherited. Both databases.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { apiDatabases, sim, variantTag, waitFor } from '../helpers/server.ts';
import { ADMIN_TOKEN, as } from '../helpers/users.ts';
import { openaiServer } from '../helpers/openai.ts';
import { gateName } from '../helpers/wait.ts';

const MODEL = 'provider_c/sim-c-large';

for (const db of apiDatabases()) {
  describe(`OpenAI-compatible responses of a deleted chat ${variantTag(db)}`, () => {
    const s = openaiServer({ db, env: { ADMIN_TOKEN } }, ADMIN_TOKEN);

    const deleteChat = async (chatId: string) => assert.equal((await as(s.t, ADMIN_TOKEN).call('DELETE', `/v1/chats/${chatId}`)).status, 200);

    it('deleting a chat deletes its responses: retrieve, resume and previous_response_id answer 404', async () => {
      const first = await s.ai.responses.create({ model: MODEL, input: 'to be deleted' });
      const second = await s.ai.responses.create({ model: MODEL, input: 'and again', previous_response_id: first.id });
      const other = await s.ai.responses.create({ model: MODEL, input: 'another chat' });
      await deleteChat((first as any).chat_id);
      for (const id of [first.id, second.id]) {
        await assert.rejects(s.ai.responses.retrieve(id), OpenAI.NotFoundError, `retrieve ${id}`);
        await assert.rejects(s.ai.responses.retrieve(id, { stream: true, starting_after: 2 }), OpenAI.NotFoundError, `resume ${id}`);
        await assert.rejects(s.ai.responses.cancel(id), OpenAI.NotFoundError, `cancel ${id}`);
      }
      await assert.rejects(s.ai.responses.create({ model: MODEL, input: 'more', previous_response_id: second.id }), OpenAI.NotFoundError);
      assert.equal((await s.ai.responses.retrieve(other.id)).output_text, 'Simulated reply to: another chat');
    });

    it('a chat begun from an earlier turn of a deleted chat keeps the history it inherited', async () => {
      const first = await s.ai.responses.create({ model: MODEL, input: 'origin question' });
      await s.ai.responses.create({ model: MODEL, input: 'origin follow-up', previous_response_id: first.id });
      const fork = await s.ai.responses.create({ model: MODEL, input: 'fork question', previous_response_id: first.id });
      await deleteChat((first as any).chat_id);
      const marker = gateName();
      const next = await s.ai.responses.create({ model: MODEL, input: `fork follow-up ${marker}`, previous_response_id: fork.id });
      assert.equal((next as any).chat_id, (fork as any).chat_id);
      const sent = s.t.sim.requests.filter((r) => JSON.stringify(r.body ?? '').includes(marker)).at(-1)!.body as any;
      assert.deepEqual(sent.messages.map((m: any) => m.content), [
        'origin question',
        'Simulated reply to: origin question',
        'fork question',
        'Simulated reply to: fork question',
        `fork follow-up ${marker}`,
      ]);
    });

    it('deleting the chat of a running background response: it reads 404 at once and after its run ended', async () => {
      const gate = gateName();
      const bg = await s.ai.responses.create({ model: MODEL, input: sim({ reply: 'never told', deltas: 2, gate, gateAfter: 1 }), background: true });
      await waitFor(() => s.t.sim.heldAt(gate) > 0, 10_000, 'the run held');
      await deleteChat((bg as any).chat_id);
      await assert.rejects(s.ai.responses.retrieve(bg.id), OpenAI.NotFoundError);
      // Its run ends (the chat's deletion ends it): nothing writes the response back.
      await waitFor(async () => !(await as(s.t, ADMIN_TOKEN).call('GET', '/v1/active-runs')).body.chats.includes((bg as any).chat_id), 10_000, 'the run ended');
      s.t.sim.openGate(gate);
      await assert.rejects(s.ai.responses.retrieve(bg.id), OpenAI.NotFoundError);
    });
  });
}
