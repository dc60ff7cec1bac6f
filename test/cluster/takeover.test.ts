// Takeover (docs/operations.md, "Answers that outlive their instance"), with real processes and a real
// SIGKILL: two instances on one Postgres and one Redis; a provider_b stream (started with an
// Idempotency-Key) and a provider_c stream run on i0, each held by a simulator gate after a few deltas,
// with a client following the provider_b run through i1. Once both runs have checkpointed text, i0 is
// killed. The follower is told the run's instance stopped (a run's frames do not survive their
// instance), so the client attaches again through i1, as docs/clients.md tells clients to: the
// replay holds the checkpointed text, a new start on the chat gets 409 while the continuation is held
// at its gate, lastRun is the new call; then the gate opens and the client gets one `done` with the
// whole scripted answer, stored once, not interrupted. A retry with the start's Idempotency-Key
// attaches to the continuation too. The provider_c run (its API cannot continue a turn) is recovered
// as interrupted text by the peer. With RUN_TAKEOVER=false the provider_b run is recovered as
// interrupted text as well.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { clusterSuite, rebuilt, slow, type ClusterSuite, type Instance } from '../helpers/cluster.ts';
import { sqlRows } from '../helpers/pg-cluster.ts';
import { CHECKPOINTED_TEXT } from '../helpers/store.ts';
import { readSse, sim, type SseEvent } from '../helpers/server.ts';
import { gateName, waitFor } from '../helpers/wait.ts';

/** The scripted answer: 40 slices, the stream held at its gate after 5 of them. */
const ANSWER = Array.from({ length: 40 }, (_, i) => `w${i} `).join('');
const ENV = { INSTANCE_HEARTBEAT_MS: '200', CHECKPOINT_MS: '100', CLUSTER_LEASE_TTL_MS: '2000' };
/** How long the sweeper and a lease TTL may take on a loaded machine. */
const RECOVERY_WAIT_MS = 60_000;

const post = (inst: Instance, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(inst.url + path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

/** Starts a stream on `inst` and resolves with its meta once it came; the rest of the response is dropped. */
async function startStream(inst: Instance, body: unknown, headers: Record<string, string> = {}) {
  const res = await post(inst, '/v1/chat-completions/stream', body, headers);
  assert.equal(res.status, 200);
  const controller = new AbortController();
  let meta!: (e: SseEvent) => void;
  const got = new Promise<SseEvent>((r) => (meta = r));
  void readSse(res, controller, (ev) => ev.event === 'meta', (ev) => meta(ev)).catch(() => undefined);
  return (await got).data as { chatId: string; callId: string };
}

const checkpoint = async (suite: ClusterSuite, callId: string) =>
  (await sqlRows(suite.cluster.databaseUrl, CHECKPOINTED_TEXT, [callId]))[0]?.checkpoint_text ?? '';

const chatOf = async (inst: Instance, chatId: string) => (await inst.call('GET', `/v1/chats/${chatId}`)).body.chat;

const assistants = (chat: { messages: Array<{ role: string; content: string; metadata: unknown }> }) => chat.messages.filter((m) => m.role === 'assistant');

async function recoveredMetric(inst: Instance, how: string): Promise<number> {
  const text = await fetch(`${inst.url}/metrics`).then((r) => r.text());
  return Number(new RegExp(`^css_runs_recovered_total\\{how="${how}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/**
 * POSTs `path` on `inst` until it answers 200: a 404 means the continuation has not started yet, a
 * 503 that the dead instance's lease has not expired yet (its owner does not answer).
 */
async function whenAnswering(inst: Instance, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  let res: Response | undefined;
  await waitFor(async () => {
    res = await post(inst, path, body, headers);
    if (res.status === 200) return true;
    assert.ok(res.status === 404 || res.status === 503, `${path}: ${res.status}`);
    await res.body?.cancel();
    return false;
  }, RECOVERY_WAIT_MS, `${path} on ${inst.id} to answer`);
  return res!;
}

/** The provider_b run's request: the whole answer scripted, held at `gate` after 5 slices. */
const answerRequest = (gate: string) => ({
  provider: 'provider_b',
  model: 'm',
  messages: [{ role: 'user', content: sim({ reply: ANSWER, deltas: 40, gate, gateAfter: 5 }) }],
});

/** Kills `victim` once every call has checkpointed text. */
async function killWithCheckpoints(suite: ClusterSuite, victim: Instance, callIds: string[]): Promise<void> {
  for (const id of callIds) await waitFor(async () => (await checkpoint(suite, id)) !== '', 30_000, 'a checkpoint with text');
  await victim.kill('SIGKILL');
}

describe('takeover: a live peer continues a lost provider_b run', async () => {
  const suite = await clusterSuite({ n: 2, env: ENV });
  if (!suite) return;

  it('SIGKILL the owner: attach through the peer replays the checkpoint, then the continuation, to one done with the whole answer', async () => {
    const [victim, peer] = suite.cluster.instances as [Instance, Instance];
    const gate = gateName();
    const key = { 'idempotency-key': `takeover-${gate}` };
    const body = answerRequest(gate);
    const b = await startStream(victim, body, key);
    const c = await startStream(victim, slow(400, 10, {}, { gate: gateName(), gateAfter: 1 }));
    // A client following the run through the peer before the kill.
    const follower = await post(peer, `/v1/chats/${b.chatId}/stream/attach`, {});
    assert.equal(follower.status, 200);
    const followed = readSse(follower, new AbortController()).catch(() => [] as SseEvent[]);
    await killWithCheckpoints(suite, victim, [b.callId, c.callId]);
    assert.equal((await followed).at(-1)?.event, 'error', 'the follower is told the run’s instance stopped');

    const attached = await whenAnswering(peer, `/v1/chats/${b.chatId}/stream/attach`, {});
    let meanwhile: { conflict: number; lastRun: { callId: string; status: string } } | undefined;
    const events = await readSse(attached, new AbortController(), undefined, async (ev) => {
      if (ev.event !== 'delta' || meanwhile) return;
      // The replay arrived; the continuation waits at the gate: the run is surely going on.
      const again = await peer.stream('/v1/chat-completions/stream', { ...body, chatId: b.chatId });
      meanwhile = { conflict: again.status, lastRun: (await chatOf(peer, b.chatId)).lastRun };
      suite.sim.openGate(gate);
    });
    const meta = events.find((e) => e.event === 'meta')!.data;
    assert.notEqual(meta.callId, b.callId, 'the continuation is a new LlmCall');
    assert.deepEqual(meanwhile, { conflict: 409, lastRun: { ...meanwhile!.lastRun, callId: meta.callId, status: 'running' } });
    assert.deepEqual(events.filter((e) => e.event === 'done').length, 1);
    assert.equal(events.at(-1)?.event, 'done');
    assert.equal(events.at(-1)!.data.text, ANSWER);
    assert.equal(rebuilt(events), ANSWER, 'the replayed checkpoint, then the continuation');

    const chat = await chatOf(peer, b.chatId);
    assert.deepEqual(assistants(chat).map((m) => [m.content, m.metadata]), [[ANSWER, null]], 'one stored answer, not interrupted');
    assert.deepEqual([chat.lastRun.callId, chat.lastRun.status], [meta.callId, 'succeeded']);
    assert.equal(await recoveredMetric(peer, 'continued'), 1);

    // The start's Idempotency-Key now names the continuation: a retry through the peer is answered from it.
    const retry = await post(peer, '/v1/chat-completions/stream', body, key);
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    const replayed = await readSse(retry, new AbortController());
    assert.deepEqual([replayed.at(-1)?.event, replayed.at(-1)?.data.text], ['done', ANSWER]);

    // provider_c cannot continue a turn: its run is recovered as interrupted text by the peer.
    await waitFor(async () => (await chatOf(peer, c.chatId)).lastRun.status !== 'running', RECOVERY_WAIT_MS, 'the provider_c run to be recovered');
    const cChat = await chatOf(peer, c.chatId);
    assert.deepEqual(assistants(cChat).map((m) => m.metadata), [{ interrupted: true, reason: 'instance lost' }]);
    assert.match(cChat.lastRun.error, /^instance lost/);
  });
});

describe('takeover off (RUN_TAKEOVER=false): a lost provider_b run is recovered as interrupted text', async () => {
  const suite = await clusterSuite({ n: 2, env: { ...ENV, RUN_TAKEOVER: 'false' } });
  if (!suite) return;

  it('SIGKILL the owner: the peer stores the checkpointed text as the interrupted answer', async () => {
    const [victim, peer] = suite.cluster.instances as [Instance, Instance];
    const b = await startStream(victim, answerRequest(gateName()));
    await killWithCheckpoints(suite, victim, [b.callId]);
    await waitFor(async () => (await chatOf(peer, b.chatId)).lastRun.status !== 'running', RECOVERY_WAIT_MS, 'the run to be recovered');
    const chat = await chatOf(peer, b.chatId);
    const [answer] = assistants(chat);
    assert.deepEqual(answer?.metadata, { interrupted: true, reason: 'instance lost' });
    assert.ok(answer.content !== '' && ANSWER.startsWith(answer.content), `a prefix of the answer: ${answer.content}`);
    assert.deepEqual([chat.lastRun.callId, chat.lastRun.status], [b.callId, 'failed']);
    assert.equal(await recoveredMetric(peer, 'continued'), 0);
  });
});

describe("takeover: a continued run counts against its user's limit", async () => {
  const ADMIN_TOKEN = 'takeover-users-admin';
  const suite = await clusterSuite({ n: 2, env: { ...ENV, ADMIN_TOKEN } });
  if (!suite) return;

  it('the continuation is not refused, but the user’s next start is, until it ends', async () => {
    const [victim, peer] = suite.cluster.instances as [Instance, Instance];
    const created = await peer.call('POST', '/v1/users', { name: 'Cont', maxActiveRuns: 1 }, { authorization: `Bearer ${ADMIN_TOKEN}` });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const auth = { authorization: `Bearer ${created.body.apiKey}` };
    const userId = created.body.user.id as string;
    const redis = new Redis(suite.redis.url);
    try {
      const gate = gateName();
      const b = await startStream(victim, answerRequest(gate), auth);
      await killWithCheckpoints(suite, victim, [b.callId]);
      // The continuation, once started on the peer, holds one of the user's slots there.
      const slots = () => redis.hget(`${suite.prefix}userruns:${peer.id}`, userId);
      await waitFor(async () => (await slots()) === '1', RECOVERY_WAIT_MS, 'the continuation to take one of the user’s slots on the peer');
      // The dead instance's own count goes with its liveness: from then on the continuation's alone counts.
      await waitFor(async () => (await redis.exists(`${suite.prefix}alive:${victim.id}`)) === 0, RECOVERY_WAIT_MS, 'the victim’s liveness to expire');
      const hi = { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'hi' }] };
      const refused = await peer.call('POST', '/v1/chat-completions', hi, auth);
      assert.deepEqual([refused.status, refused.body], [429, { message: 'too many active runs for this user (limit 1)' }]);
      suite.sim.openGate(gate);
      const lastRun = async () => (await peer.call('GET', `/v1/chats/${b.chatId}`, undefined, auth)).body.chat?.lastRun;
      await waitFor(async () => (await lastRun())?.status === 'succeeded', RECOVERY_WAIT_MS, 'the continuation to end');
      await waitFor(async () => (await peer.call('POST', '/v1/chat-completions', hi, auth)).status === 200, 10_000, 'the slot back');
    } finally {
      redis.disconnect();
    }
  });
});
