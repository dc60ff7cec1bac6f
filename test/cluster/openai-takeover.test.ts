// A background response whose instance is killed with SIGKILL, continued by the survivor (takeover, as in
// takeover.test.ts), resumed through the official `openai` SDK: the checkpoint keeps the cuts of the deltas
// it holds (sql/021), so the continuation streams the checkpointed text in the very deltas, under the very
// sequence numbers, that the lost instance streamed it in. A client that read the response on the victim up
// to any N within the checkpoint and resumes from N on the survivor gets exactly the tail of a full read
// there, and its own events up to N are the full read's; one past the checkpoint gets `resume_point_lost`.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { clusterSuite, type Instance } from '../helpers/cluster.ts';
import { openaiClient, readAll } from '../helpers/openai.ts';
import { sqlRows } from '../helpers/pg-cluster.ts';
import { sim } from '../helpers/server.ts';
import { CHECKPOINTED_TEXT } from '../helpers/store.ts';
import { gateName, waitFor } from '../helpers/wait.ts';

type Event = OpenAI.Responses.ResponseStreamEvent;

/** 40 slices; the stream holds at its gate after 10 of them. */
const ANSWER = Array.from({ length: 40 }, (_, i) => `w${i} `).join('');
const HELD = 10;
const ENV = { INSTANCE_HEARTBEAT_MS: '200', CHECKPOINT_MS: '100', CLUSTER_LEASE_TTL_MS: '2000' };
/** How long the sweeper and a lease TTL may take on a loaded machine. */
const RECOVERY_WAIT_MS = 60_000;

const sdk = (inst: Instance) => openaiClient(inst.url, 'open-mode');

/** The events of a stream until it ends or breaks (its instance killed, or an `error` event). */
async function readUntilBroken(stream: AsyncIterable<Event>, seen: Event[]): Promise<unknown> {
  try {
    for await (const ev of stream) seen.push(ev);
    return null;
  } catch (err) {
    return err;
  }
}

describe('takeover: a resume within the checkpoint of a lost OpenAI response is exact', async () => {
  const suite = await clusterSuite({ n: 2, env: ENV });
  if (!suite) return;

  it('SIGKILL the owner: resumes on the survivor from N within the checkpoint equal the full read; past it, resume_point_lost', async () => {
    const [victim, survivor] = suite.cluster.instances as [Instance, Instance];
    const gate = gateName();
    const bg = await sdk(victim).responses.create({ model: 'provider_b/m', input: sim({ reply: ANSWER, deltas: 40, gate, gateAfter: HELD }), background: true });
    // A client reading it on the victim: it has every event up to the held delta when the victim dies.
    const before: Event[] = [];
    const firstRead = readUntilBroken(await sdk(victim).responses.retrieve(bg.id, { stream: true }), before);
    const [{ call_id: callId, chat_id: chatId }] = await sqlRows<{ call_id: string; chat_id: string }>(suite.cluster.databaseUrl, 'SELECT call_id, chat_id FROM openai_responses WHERE id = $1', [bg.id]);
    const deltasBefore = () => before.filter((e): e is OpenAI.Responses.ResponseTextDeltaEvent => e.type === 'response.output_text.delta');
    await waitFor(() => deltasBefore().length === HELD, 10_000, 'the first reader got the held deltas');
    const heldText = deltasBefore().map((e) => e.delta).join('');
    let checkpointed = '';
    await waitFor(async () => (checkpointed = (await sqlRows(suite.cluster.databaseUrl, CHECKPOINTED_TEXT, [callId]))[0]?.checkpoint_text ?? '') === heldText, 30_000, 'the held text checkpointed').catch((err: Error) =>
      assert.fail(`${err.message}: ${JSON.stringify(checkpointed)} ${victim.output().split('\n').filter((l) => /checkpoint|error/i.test(l)).slice(0, 5).join('\n')}`),
    );
    await victim.kill('SIGKILL');
    await firstRead;

    // The survivor continues it (its run then holds at the gate again, the rest of the answer unsent):
    // the chat's run answers an attach there.
    await waitFor(async () => {
      const res = await fetch(`${survivor.url}/v1/chats/${chatId}/stream/attach`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      await res.body?.cancel();
      return res.status === 200;
    }, RECOVERY_WAIT_MS, 'the continuation to run on the survivor');
    const ai = sdk(survivor);
    // The continuation resumes the checkpointed text trimmed at its end: the deltas it holds whole are exact.
    const kept = heldText.trimEnd().length;
    let end = 0;
    const exact = deltasBefore().filter((e) => (end += e.delta.length) <= kept).length;
    assert.ok(exact >= HELD - 2, `${exact} deltas kept whole`);
    const lastExact = deltasBefore()[exact - 1]!.sequence_number;
    const firstDelta = deltasBefore()[0]!.sequence_number;
    const points = [-1, 1, firstDelta, firstDelta + 3, lastExact];
    // Each read attached (its answer's head came) while the run is held: they all follow the live run.
    const streams = await Promise.all(points.map((n) => ai.responses.retrieve(bg.id, { stream: true, ...(n >= 0 && { starting_after: n }) })));
    const pastSeen: Event[] = [];
    const past = readUntilBroken(await ai.responses.retrieve(bg.id, { stream: true, starting_after: lastExact + 1 }), pastSeen);
    const reads = streams.map(readAll);
    suite.sim.openGate(gate);

    const [all, ...got] = await Promise.all(reads) as [Event[], ...Event[][]];
    assert.deepEqual(all.map((e) => e.sequence_number), all.map((_, i) => i));
    assert.equal(all.at(-1)!.type, 'response.completed');
    assert.equal((all.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response.output_text, ANSWER);
    points.slice(1).forEach((n, i) => {
      assert.deepEqual(got[i], all.filter((e) => e.sequence_number > n), `resumed from ${n}`);
      // What the client had before the kill, up to N, is the full read's: no different text under a number.
      assert.deepEqual(before.filter((e) => e.sequence_number <= n), all.filter((e) => e.sequence_number <= n), `read on the victim up to ${n}`);
    });
    // Nothing under a number it cannot replay exactly: the error event alone, which the SDK throws.
    assertLost(await past, pastSeen, lastExact + 1);

    // After the continuation ended, from what the survivor stored: the very same, on either side of the checkpoint.
    await waitFor(async () => (await ai.responses.retrieve(bg.id)).status === 'completed', 10_000, 'the continuation’s end stored');
    assert.deepEqual(await readAll(await ai.responses.retrieve(bg.id, { stream: true })), all, 'a full read after the end');
    for (const n of points.slice(1)) {
      assert.deepEqual(await readAll(await ai.responses.retrieve(bg.id, { stream: true, starting_after: n })), all.filter((e) => e.sequence_number > n), `after the end, from ${n}`);
    }
    for (const n of [lastExact + 1, all.length - 3]) {
      const seen: Event[] = [];
      assertLost(await readUntilBroken(await ai.responses.retrieve(bg.id, { stream: true, starting_after: n }), seen), seen, n);
    }
  });
});

/** A resume from `n` past the checkpoint: no event, the SDK's APIError of the `error` event, resume_point_lost. */
function assertLost(err: unknown, seen: Event[], n: number): void {
  assert.deepEqual(seen, [], `nothing yielded from ${n}`);
  assert.ok(err instanceof OpenAI.APIError, `an APIError from ${n}: ${String(err)}`);
  assert.equal(err.code, 'resume_point_lost');
  assert.match(err.message, new RegExp(`after sequence number ${n} cannot be replayed exactly`));
}
