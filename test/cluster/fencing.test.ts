// Fencing, with real processes on one Postgres and one Redis and a short lease TTL:
// - a partition: one instance reaches Redis through a proxy that black-holes its traffic mid-run.
//   It ends its own run (`error`, the fencing message, its text stored as interrupted) before its
//   lease expires; only then does the other instance take a new stream for the chat, and no delta
//   of the old run arrives after the new run's `meta`. The chat holds one answer per run, in order.
// - a frozen owner (SIGSTOP past the TTL): another instance runs the chat meanwhile; resumed
//   (SIGCONT), the owner's late write is refused by the fencing token and its LlmCall is failed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { clusterSuite, openStream, rebuilt, slow, type Instance } from '../helpers/cluster.ts';
import { waitFor, type SseEvent } from '../helpers/server.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { gateName } from '../helpers/wait.ts';

// Short, so the tests are quick; long enough that the fencing margin (a third) outlasts a loaded machine's lag.
const TTL_MS = 4500;
const FENCED = 'run cancelled: this instance lost contact with the cluster';

describe('cluster mode: fencing a cut-off or frozen owner', async () => {
  let proxy: TcpProxy;
  let db: pg.Client;
  const suite = await clusterSuite({ n: 1, env: { CLUSTER_LEASE_TTL_MS: String(TTL_MS) }, beforeClose: async () => db?.end() });
  if (!suite) return;
  before(async () => {
    const target = new URL(suite.redis.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    db = new pg.Client({ connectionString: suite.cluster.databaseUrl });
    await db.connect();
  });
  after(async () => {
    await proxy?.close();
  });

  const messages = async (chatId: string) =>
    (await db.query<{ role: string; content: string; metadata: Record<string, unknown> | null }>('SELECT role, content, metadata FROM messages WHERE chat_id = $1 ORDER BY seq', [chatId])).rows;
  const callStatus = async (callId: string) => (await db.query<{ status: string; error: string | null }>('SELECT status, error FROM llm_calls WHERE id = $1', [callId])).rows[0];

  it('a partitioned owner ends its run before another instance can take the chat', async (t) => {
    const [a] = suite.cluster.instances as [Instance];
    const cut = await suite.cluster.add('cut', { REDIS_URL: `redis://127.0.0.1:${proxy.port}` });
    // Held after its first delta at a gate nobody opens: it can only end by the fencing.
    const old = await openStream(cut, '/v1/chat-completions/stream', slow(600, 0, {}, { gate: gateName(), gateAfter: 1 }));
    const chatId = old.meta.data.chatId as string;
    await old.firstDelta;
    proxy.blackhole();
    // Refused (409) while the cut owner's lease holds; it streams once the lease has expired.
    const fresh = await openStream(a, '/v1/chat-completions/stream', slow(5, 50, { chatId }), { whileBusy: true });
    const oldEvents = await old.events;
    const newEvents = await fresh.events;
    assert.deepEqual(oldEvents.at(-1), { event: 'error', data: { type: 'error', message: FENCED } }, 'the cut-off run ended itself');
    assert.equal(newEvents.at(-1)?.event, 'done');
    const newMeta = fresh.timeline.find((e) => e.event === 'meta')!.at;
    const lastOld = Math.max(...old.timeline.map((e) => e.at));
    assert.ok(lastOld < newMeta, `the old run's last event (${lastOld.toFixed(0)}) came before the new run's meta (${newMeta.toFixed(0)})`);
    t.diagnostic(`partition: the cut run ended ${(newMeta - lastOld).toFixed(0)} ms before the new run's meta`);
    const stored = await messages(chatId);
    assert.deepEqual(
      stored.map((m) => m.role),
      ['user', 'assistant', 'user', 'assistant'],
      'one answer per run, in order',
    );
    assert.equal(stored[1]!.content, rebuilt(oldEvents), 'the cut run’s streamed text');
    assert.deepEqual(stored[1]!.metadata, { interrupted: true });
    assert.equal(stored[3]!.content, rebuilt(newEvents));
    assert.deepEqual(await callStatus(old.meta.data.callId), { status: 'failed', error: FENCED });
    assert.match(cut.output(), /its run ends here \(fenced\)/);
  });

  it('a frozen owner’s late write is refused by the fencing token', async () => {
    const [a] = suite.cluster.instances as [Instance];
    const frozen = await suite.cluster.add('frozen');
    // Held after its first delta until the owner is resumed: its late write comes after the new run's.
    const gate = gateName();
    const old = await openStream(frozen, '/v1/chat-completions/stream', slow(100, 0, {}, { gate, gateAfter: 1 }));
    const chatId = old.meta.data.chatId as string;
    const callId = old.meta.data.callId as string;
    await old.firstDelta;
    frozen.child.kill('SIGSTOP');
    let newEvents: SseEvent[];
    try {
      const fresh = await openStream(a, '/v1/chat-completions/stream', slow(5, 50, { chatId }), { whileBusy: true });
      newEvents = await fresh.events;
      assert.equal(newEvents.at(-1)?.event, 'done');
    } finally {
      frozen.child.kill('SIGCONT');
      suite.sim.openGate(gate);
    }
    const oldEvents = await old.events;
    assert.equal(oldEvents.at(-1)?.event, 'error', 'the resumed run ends with an error');
    await waitFor(() => /write refused by the fencing token/.test(frozen.output()), 30_000, 'the late write to be refused');
    await waitFor(async () => (await callStatus(callId))?.status === 'failed', 30_000, 'the old LlmCall to be failed');
    const stored = await messages(chatId);
    assert.deepEqual(stored.map((m) => m.role), ['user', 'user', 'assistant'], 'exactly the second run’s answer');
    assert.equal(stored[2]!.content, rebuilt(newEvents));
    assert.notEqual(rebuilt(oldEvents), '', 'the old run had streamed text it then tried to store');
  });
});
