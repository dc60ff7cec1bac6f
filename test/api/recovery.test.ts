// Answers that outlive their instance, with the real entry point and real signals: SIGKILL mid-stream
// once the client has deltas and a checkpoint holds text, then a restart with the same INSTANCE_ID, a
// replacement with a new one (the sweeper), or both racing: the chat gets the checkpointed text as its
// interrupted answer (`reason: "instance lost"`), a prefix of the answer holding at least what had been
// checkpointed, exactly once; its lastRun reads failed, "instance lost"; CHECKPOINT_MS=0 stores nothing.
// Each case has its own database, services and INSTANCE_IDs, so the cases run two at a time: not all
// at once, because a service start costs ~10 s of CPU (module loading, an actor thread, the database),
// and five starting together on a busy 2-core machine outran startService's time limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDatabase } from '../../src/db/pool.ts';
import { createScratchPostgres, migratedEmbeddedDataDir } from '../helpers/db.ts';
import { sqlRows } from '../helpers/pg-cluster.ts';
import { CHECKPOINTED_TEXT } from '../helpers/store.ts';
import { startService, stopService, type ServiceProcess } from '../helpers/process.ts';
import { apiDatabases, readSse, sim, waitFor, type DbKind, type SseEvent } from '../helpers/server.ts';

/** The scripted answer: 120 deltas at 20 a second, long enough to be killed in the middle. */
const ANSWER = Array.from({ length: 120 }, (_, i) => `w${i} `).join('');
const BODY = JSON.stringify({
  provider: 'provider_c',
  model: 'sim-c-large',
  enabledTools: [],
  messages: [{ role: 'user', content: sim({ reply: ANSWER, deltas: 120, rate: 20 }) }],
});
/** Deltas the client must have received before the kill (which also waits for a checkpoint statement). */
const DELTAS_BEFORE_KILL = 20;

interface Setup {
  env: Record<string, string>;
  /** Postgres: the test's own view while the service runs (the embedded database has one connection). */
  pgUrl: string | null;
  /** The checkpointed text of a call, read beside the service (Postgres) or after its death (embedded). */
  checkpoint(callId: string): Promise<string | null>;
  cleanup(): Promise<void>;
}

async function setup(kind: DbKind, env: Record<string, string>): Promise<Setup> {
  const dir = await migratedEmbeddedDataDir();
  const scratch = kind === 'postgres' ? await createScratchPostgres() : null;
  const base = { DATA_DIR: dir.dataDir, PORT: '0', ACTOR_THREADS: '1', INSTANCE_HEARTBEAT_MS: '200', ...env };
  const query = CHECKPOINTED_TEXT;
  return {
    env: scratch ? { ...base, DATABASE_URL: scratch.url } : base,
    pgUrl: scratch?.url ?? null,
    async checkpoint(callId) {
      if (scratch) return (await sqlRows(scratch.url, query, [callId]))[0]?.checkpoint_text || null;
      const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dir.dataDir });
      try {
        return (await db.pool.query(query, [callId])).rows[0]?.checkpoint_text || null;
      } finally {
        await db.close();
      }
    },
    async cleanup() {
      await dir.cleanup();
      await scratch?.drop();
    },
  };
}

/** A persisted stream; resolves once the client has `n` deltas, with the run's ids. */
async function streamUntil(service: ServiceProcess, n: number): Promise<{ chatId: string; callId: string; received: () => string; ended: Promise<SseEvent[]> }> {
  const res = await fetch(`${service.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY });
  let text = '';
  let deltas = 0;
  let meta: { chatId: string; callId: string } | undefined;
  let reached!: () => void;
  const enough = new Promise<void>((r) => (reached = r));
  const done = readSse(res, new AbortController(), undefined, (ev) => {
    if (ev.event === 'meta') meta = ev.data;
    if (ev.event === 'delta') {
      text += ev.data.text;
      if (++deltas >= n) reached();
    }
  }).catch(() => []);
  await Promise.race([enough, done.then(() => Promise.reject(new Error(`the stream ended after ${deltas} deltas`)))]);
  return { chatId: meta!.chatId, callId: meta!.callId, received: () => text, ended: done };
}

/**
 * Kills `service` once a checkpoint statement has been written (its /metrics says so: the embedded
 * database cannot be read beside the service) and, on Postgres, holds text; returns that text.
 */
async function killMidStream(service: ServiceProcess, s: Setup, callId: string): Promise<string | null> {
  let seen: string | null = null;
  await waitFor(async () => (await metric(service, CHECKPOINTS)) >= 1, 30_000, 'a checkpoint statement');
  if (s.pgUrl) {
    await waitFor(async () => ((seen = await s.checkpoint(callId)) ?? '') !== '', 30_000, 'a checkpoint with text');
  }
  await stopService(service, 'SIGKILL');
  return seen;
}

/** A search run whose engine answers in a minute; resolves once its row names the instance running it. */
async function startSlowSearch(service: ServiceProcess, pgUrl: string): Promise<string> {
  const query = `tides SIM ${JSON.stringify({ searchDelayMs: 60_000, answerDelayMs: 60_000 })}`;
  const created = await fetch(`${service.url}/v1/searches`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
  const id = (await created.json()).search.id as string;
  const res = await fetch(`${service.url}/v1/searches/${id}/run/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  assert.equal(res.status, 200);
  void res.body?.cancel().catch(() => undefined);
  await waitFor(async () => (await sqlRows(pgUrl, 'SELECT run_instance_id FROM searches WHERE id = $1', [id]))[0]?.run_instance_id != null, 30_000, 'the search run to be recorded');
  return id;
}

async function chatOf(service: ServiceProcess, chatId: string) {
  return (await fetch(`${service.url}/v1/chats/${chatId}`).then((r) => r.json())).chat;
}

const RECOVERED = /^css_runs_recovered_total\{how="interrupted"\} (\d+)$/m;
const CHECKPOINTS = /^css_checkpoints_total (\d+)$/m;

/** A counter's value on the service's /metrics (NaN when it is missing). */
async function metric(service: ServiceProcess, line: RegExp): Promise<number> {
  const text = await fetch(`${service.url}/metrics`).then((r) => r.text());
  return Number(line.exec(text)?.[1] ?? NaN);
}

const recoveredMetric = (service: ServiceProcess) => metric(service, RECOVERED);

/** The chat's one assistant message is the interrupted answer, a prefix of ANSWER holding `atLeast`. */
async function assertRecovered(service: ServiceProcess, chatId: string, atLeast: string) {
  const chat = await chatOf(service, chatId);
  const answers = chat.messages.filter((m: { role: string }) => m.role === 'assistant');
  assert.equal(answers.length, 1, 'exactly one assistant message');
  assert.deepEqual(answers[0].metadata, { interrupted: true, reason: 'instance lost' });
  assert.ok(ANSWER.startsWith(answers[0].content), `a prefix of the answer: ${answers[0].content}`);
  assert.ok(answers[0].content.startsWith(atLeast), `holds what had been checkpointed (${atLeast.length} chars)`);
  assert.equal(chat.lastRun.status, 'failed');
  assert.match(chat.lastRun.error, /^instance lost/);
}

const lastDb = apiDatabases().at(-1)!;

describe('answers outlive their instance', { concurrency: 2 }, () => {
  for (const kind of apiDatabases()) {
    it(`a restart with the same INSTANCE_ID keeps the checkpointed text as the interrupted answer (${kind})`, async () => {
      const s = await setup(kind, { INSTANCE_ID: 'crashing', CHECKPOINT_MS: '100' });
      let service: ServiceProcess | undefined;
      try {
        service = await startService(s.env);
        const run = await streamUntil(service, DELTAS_BEFORE_KILL);
        const seen = await killMidStream(service, s, run.callId);
        service = undefined;
        const checkpointed = await s.checkpoint(run.callId);
        assert.ok(checkpointed, 'the dead instance had checkpointed text');
        assert.ok(checkpointed.startsWith(seen ?? ''));
        service = await startService(s.env);
        await assertRecovered(service, run.chatId, checkpointed);
        assert.equal(await recoveredMetric(service), 1);
      } finally {
        if (service) await stopService(service, 'SIGKILL');
        await s.cleanup();
      }
    });
  }

  it(`CHECKPOINT_MS=0 stores nothing; the run still reads failed, instance lost (${lastDb})`, async () => {
    const s = await setup(lastDb, { INSTANCE_ID: 'unsaved', CHECKPOINT_MS: '0' });
    let service: ServiceProcess | undefined;
    try {
      service = await startService(s.env);
      const run = await streamUntil(service, DELTAS_BEFORE_KILL);
      assert.equal(await metric(service, CHECKPOINTS), 0, 'no checkpoint statement');
      await stopService(service, 'SIGKILL');
      service = undefined;
      assert.equal(await s.checkpoint(run.callId), null);
      service = await startService(s.env);
      const chat = await chatOf(service, run.chatId);
      assert.deepEqual(chat.messages.map((m: { role: string }) => m.role), ['user']);
      assert.deepEqual([chat.lastRun.status, /^instance lost/.test(chat.lastRun.error)], ['failed', true]);
    } finally {
      if (service) await stopService(service, 'SIGKILL');
      await s.cleanup();
    }
  });

  it(`a replacement with a new INSTANCE_ID recovers the dead one’s runs through its sweeper (${lastDb})`, async () => {
    const s = await setup(lastDb, { CHECKPOINT_MS: '100' });
    let service: ServiceProcess | undefined;
    try {
      service = await startService({ ...s.env, INSTANCE_ID: 'gone' });
      // A search run too (Postgres: its row shows it running, so the kill is decided by that row).
      const searchId = s.pgUrl ? await startSlowSearch(service, s.pgUrl) : null;
      const run = await streamUntil(service, DELTAS_BEFORE_KILL);
      const seen = await killMidStream(service, s, run.callId);
      service = undefined;
      // Embedded: the replacement holds the data directory, so read the checkpoint before it starts.
      const checkpointed = s.pgUrl ? seen! : await s.checkpoint(run.callId);
      assert.ok(checkpointed);
      service = await startService({ ...s.env, INSTANCE_ID: 'replacement' });
      const replacement = service;
      await waitFor(async () => (await chatOf(replacement, run.chatId)).lastRun.status !== 'running', 30_000, 'the sweeper to recover the run');
      await assertRecovered(service, run.chatId, checkpointed);
      assert.match(service.output(), /"instanceId":"gone","calls":1,"msg":"marked the running LlmCalls of a stopped instance as failed"/);
      assert.equal(await recoveredMetric(service), 1);
      if (searchId) {
        const search = (await fetch(`${service.url}/v1/searches/${searchId}`).then((r) => r.json())).search;
        assert.match(search.error, /^instance lost/, 'the lost search run reads as failed with a message');
        assert.deepEqual((await fetch(`${service.url}/v1/active-runs`).then((r) => r.json())).searches, []);
      }
    } finally {
      if (service) await stopService(service, 'SIGKILL');
      await s.cleanup();
    }
  });

  it('an instance paused past its recovery stores nothing over the recovered answer once resumed (postgres)', { skip: apiDatabases().includes('postgres') ? false : 'needs TEST_DATABASE_URL' }, async () => {
    const s = await setup('postgres', { CHECKPOINT_MS: '100' });
    const procs: ServiceProcess[] = [];
    try {
      const peer = await startService({ ...s.env, INSTANCE_ID: 'peer' });
      procs.push(peer);
      const paused = await startService({ ...s.env, INSTANCE_ID: 'paused' });
      procs.push(paused);
      const run = await streamUntil(paused, DELTAS_BEFORE_KILL);
      // What it checkpointed until then, at least, is recovered (its chunks go with the recovery).
      let seen = '';
      await waitFor(async () => (seen = (await s.checkpoint(run.callId)) ?? '') !== '', 30_000, 'a checkpoint with text');
      paused.child.kill('SIGSTOP');
      try {
        // Its beat goes stale (600 ms at a 200 ms beat): the peer's sweeper recovers its run meanwhile.
        await waitFor(async () => (await chatOf(peer, run.chatId)).lastRun.status !== 'running', 30_000, 'the peer to recover the run');
      } finally {
        paused.child.kill('SIGCONT');
      }
      // It streams on to its end, where its answer is refused: the client is told.
      const events = await run.ended;
      assert.equal(events.at(-1)?.event, 'error', JSON.stringify(events.at(-1)));
      await waitFor(() => /write refused by the fencing token/.test(paused.output()), 30_000, 'the late answer to be refused');
      await assertRecovered(peer, run.chatId, seen);
    } finally {
      for (const p of procs) await stopService(p, 'SIGKILL');
      await s.cleanup();
    }
  });

  it('a restart racing a peer’s sweeper recovers each run once (postgres)', { skip: apiDatabases().includes('postgres') ? false : 'needs TEST_DATABASE_URL' }, async () => {
    const s = await setup('postgres', { CHECKPOINT_MS: '100' });
    const procs: ServiceProcess[] = [];
    try {
      const peer = await startService({ ...s.env, INSTANCE_ID: 'peer' });
      procs.push(peer);
      const victim = await startService({ ...s.env, INSTANCE_ID: 'victim' });
      const runs = [];
      for (let i = 0; i < 3; i++) runs.push(await streamUntil(victim, DELTAS_BEFORE_KILL));
      const seen = [];
      for (const run of runs) {
        await waitFor(async () => ((await s.checkpoint(run.callId)) ?? '') !== '', 30_000, 'a checkpoint with text');
      }
      await stopService(victim, 'SIGKILL');
      for (const run of runs) seen.push((await s.checkpoint(run.callId))!);
      // The restart and the peer's sweeper (every 200 ms once the victim's beat is 600 ms old) go at once.
      const restarted = await startService({ ...s.env, INSTANCE_ID: 'victim' });
      procs.push(restarted);
      await waitFor(
        async () => (await sqlRows(s.pgUrl!, `SELECT count(*)::int AS n FROM llm_calls WHERE status = 'running'`))[0].n === 0,
        30_000,
        'every run to be recovered',
      );
      for (const [i, run] of runs.entries()) await assertRecovered(restarted, run.chatId, seen[i]!);
      assert.equal((await recoveredMetric(peer)) + (await recoveredMetric(restarted)), runs.length, 'each run recovered by one of them');
    } finally {
      for (const p of procs) await stopService(p, 'SIGKILL');
      await s.cleanup();
    }
  });
});
