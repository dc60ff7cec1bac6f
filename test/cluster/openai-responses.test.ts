// The OpenAI-compatible API's background responses across instances (two instances of the real entry point
// on one Postgres and one Redis), driven by the official `openai` SDK: a response started on one instance is
// read and resumed on the other from several sequence numbers, live and after its end, exactly as a full read;
// and one whose instance is killed with SIGKILL reads as failed ("instance lost") on the survivor.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type OpenAI from 'openai';
import { clusterSuite, type Instance } from '../helpers/cluster.ts';
import { sim, waitFor } from '../helpers/server.ts';
import { openaiClient, readAll } from '../helpers/openai.ts';
import { gateName } from '../helpers/wait.ts';

const MODEL = 'provider_c/sim-c-large';


const sdk = (inst: Instance) => openaiClient(inst.url, 'open-mode');

describe('cluster mode: OpenAI-compatible background responses', async () => {
  const suite = await clusterSuite({ n: 2 });
  if (!suite) return;

  it('a response started on one instance is resumed on the other from any N, live and after the end', async () => {
    const [a, b] = suite.cluster.instances.map(sdk) as [OpenAI, OpenAI];
    const gate = gateName();
    const bg = await a.responses.create({ model: MODEL, input: sim({ reply: 'p q r s t u v w', deltas: 8, gate, gateAfter: 3 }), background: true });
    await waitFor(() => suite.sim.heldAt(gate) > 0, 10_000, 'the run held after 3 deltas');
    await waitFor(async () => (await b.responses.retrieve(bg.id)).status === 'in_progress', 10_000, 'its start stored');
    const full = readAll(await b.responses.retrieve(bg.id, { stream: true }));
    const points = [1, 4, 7, 12];
    const live = points.map(async (n) => readAll(await b.responses.retrieve(bg.id, { stream: true, starting_after: n })));
    suite.sim.openGate(gate);
    const all = await full;
    assert.deepEqual(all.map((e) => e.sequence_number), all.map((_, i) => i));
    assert.equal(all.at(-1)!.type, 'response.completed');
    const resumed = await Promise.all(live);
    points.forEach((n, i) => assert.deepEqual(resumed[i], all.filter((e) => e.sequence_number > n), `live on the other instance from ${n}`));
    await waitFor(async () => (await b.responses.retrieve(bg.id)).status === 'completed', 10_000, 'its end stored');
    for (const n of points) assert.deepEqual(await readAll(await b.responses.retrieve(bg.id, { stream: true, starting_after: n })), all.filter((e) => e.sequence_number > n), `stored, from ${n}`);
  });

  it('a cancel on one instance of a response running on the other answers it cancelled, its end written there', async () => {
    const [owner, other] = suite.cluster.instances as [Instance, Instance];
    const gate = gateName();
    const bg = await sdk(owner).responses.create({ model: MODEL, input: sim({ reply: 'p q r s', deltas: 4, gate, gateAfter: 2 }), background: true });
    await waitFor(() => suite.sim.heldAt(gate) > 0, 10_000, 'the run held after 2 deltas');
    const ai = sdk(other);
    const reading = readAll(await ai.responses.retrieve(bg.id, { stream: true }));
    // The owner writes the end once the stop has ended the run; the cancel answers once it hears of it.
    const cancelled = await ai.responses.cancel(bg.id);
    assert.equal(cancelled.status, 'cancelled');
    assert.equal((await ai.responses.retrieve(bg.id)).status, 'cancelled');
    assert.equal((await sdk(owner).responses.retrieve(bg.id)).status, 'cancelled');
    const events = await reading;
    assert.equal(events.at(-1)!.type, 'response.incomplete');
    assert.deepEqual((events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent).response.output, cancelled.output, 'the text so far, as the stream ended with it');
    assert.match(JSON.stringify(cancelled.output), /p q/);
    assert.deepEqual(await readAll(await ai.responses.retrieve(bg.id, { stream: true })), events, 'read again after the end: the same events');
    // A second cancel is an answer, not an error.
    assert.equal((await ai.responses.cancel(bg.id)).status, 'cancelled');
    suite.sim.openGate(gate);
  });

  it('a response whose instance is killed with SIGKILL reads as failed on the survivor', async () => {
    const [survivor, victim] = suite.cluster.instances as [Instance, Instance];
    const gate = gateName();
    const bg = await sdk(victim).responses.create({ model: MODEL, input: sim({ reply: 'never whole', deltas: 5, gate, gateAfter: 1 }), background: true });
    await waitFor(() => suite.sim.heldAt(gate) > 0, 10_000, 'the run held');
    await victim.kill('SIGKILL');
    const ai = sdk(survivor);
    // The heartbeat sweeper recovers the lost call (seconds: missed beats); until then it reads in progress.
    let seen = '';
    await waitFor(async () => {
      const r = await ai.responses.retrieve(bg.id);
      const db = new (await import('pg')).default.Client({ connectionString: suite.cluster.databaseUrl });
      await db.connect();
      const calls = (await db.query('SELECT l.status, l.error FROM llm_calls l JOIN openai_responses r ON r.call_id = l.id WHERE r.id = $1', [bg.id])).rows;
      await db.end();
      seen = `${r.status} ${JSON.stringify(r.error)} calls ${JSON.stringify(calls)} runs ${JSON.stringify((await survivor.call('GET', '/v1/active-runs?scope=cluster')).body)}`;
      return r.status === 'failed';
    }, 60_000, 'the response to read failed').catch((err: Error) => assert.fail(`${err.message}: it read ${seen}`));
    const lost = await ai.responses.retrieve(bg.id);
    assert.match(lost.error!.message, /instance lost/);
    const events = await readAll(await ai.responses.retrieve(bg.id, { stream: true }));
    assert.equal(events.at(-1)!.type, 'response.failed');
  });
});
