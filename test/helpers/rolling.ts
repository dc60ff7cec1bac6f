// A rolling restart of two instances of the real entry point behind nginx (deploy/nginx.conf), with
// clients keeping `live` streams going through nginx the whole time. Shared by the test (small) and
// the bench row (200 streams of 10 s). Each instance is restarted on its own port: SIGTERM, wait for
// its exit, start it again, wait for /ready, wait for nginx to send it a stream again.
import pg from 'pg';
import { startNginxBalancer } from './nginx.ts';
import { stablePort } from './ports.ts';
import { simCompletion, startService, type ServiceProcess } from './process.ts';
import { readSse, sim, waitFor, type SseEvent } from './server.ts';

export interface RollingOptions {
  /** Environment of both instances (database, simulator keys...). */
  env: Record<string, string>;
  live: number;
  deltas: number;
  rate: number;
  log?: (line: string) => void;
}

export interface StreamOutcome {
  status: number;
  chatId: string | null;
  end: SseEvent | undefined;
  text: string;
}

export interface RollingResult {
  streams: StreamOutcome[];
  exitCodes: (number | null)[];
  /** Runs each instance still had when its SIGTERM was sent. */
  activeAtSigterm: number[];
}

const activeChats = async (url: string) => ((await fetch(`${url}/v1/active-runs`).then((r) => r.json())) as { chats: string[] }).chats.length;

/** Returns null when nginx is not available. */
export async function rollingRestart(o: RollingOptions): Promise<RollingResult | null> {
  const ports = [await stablePort()];
  while (ports.length < 2) { const p = await stablePort(); if (p !== ports[0]) ports.push(p); }
  const log = o.log ?? (() => {});
  const start = (i: number) => startService({ PORT: String(ports[i]), INSTANCE_ID: `rolling-${i}`, ...o.env });
  const instances: ServiceProcess[] = [await start(0)];
  instances.push(await start(1));
  const proxy = await startNginxBalancer(ports).catch((err: unknown) => err as Error);
  if (!proxy || proxy instanceof Error) {
    for (const p of instances) p.child.kill('SIGKILL');
    if (proxy) throw proxy;
    return null;
  }
  const base = `http://127.0.0.1:${proxy.port}`;
  const streams: StreamOutcome[] = [];
  let rolling = true;
  const body = simCompletion(sim({ deltas: o.deltas, rate: o.rate }));
  const client = async () => {
    while (rolling) {
      const res = await fetch(`${base}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      if (res.status !== 200) {
        // Recorded for the caller; this client stops rather than spin on a balancer with no instance left.
        streams.push({ status: res.status, chatId: null, end: undefined, text: await res.text() });
        return;
      }
      const events = await readSse(res, new AbortController()).catch(() => [] as SseEvent[]);
      const text = events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');
      streams.push({ status: 200, chatId: events.find((e) => e.event === 'meta')?.data.chatId ?? null, end: events.at(-1), text });
    }
  };
  const clients = Array.from({ length: o.live }, client);
  const exitCodes: (number | null)[] = [];
  const activeAtSigterm: number[] = [];
  try {
    for (const i of [0, 1]) {
      const url = instances[i]!.url;
      // Both in the balancer's rotation first: nginx keeps an instance it saw fail (a refused start, a
      // refused connection) out for fail_timeout, and with both out it has nowhere to send a start.
      for (const p of instances) await waitFor(async () => (await activeChats(p.url)) > 0, 60_000, `instance ${instances.indexOf(p)} to hold streams`);
      activeAtSigterm.push(await activeChats(url));
      log(`SIGTERM to instance ${i} with ${activeAtSigterm.at(-1)} live streams`);
      instances[i]!.child.kill('SIGTERM');
      exitCodes.push(await instances[i]!.exited);
      instances[i] = await start(i);
      await waitFor(async () => (await fetch(`${instances[i]!.url}/ready`).then((r) => r.status, () => 0)) === 200, 60_000, `instance ${i} ready`);
      log(`instance ${i} restarted and ready`);
    }
    // Back in the balancer's rotation: the restarted second one takes streams again.
    await waitFor(async () => (await activeChats(instances[1]!.url)) > 0, 60_000, 'instance 1 to take streams again');
  } finally {
    rolling = false;
    await Promise.all(clients);
    await proxy.stop();
    for (const p of instances) {
      p.child.kill('SIGTERM');
      await p.exited;
    }
  }
  return { streams, exitCodes, activeAtSigterm };
}

export interface RollingVerdict {
  streams: number;
  /** Starts a client saw refused or failed (nginx retries a draining instance's 503 elsewhere). */
  refused: number;
  /** Streams that did not end with a plain `done`. */
  cut: number;
  /** Streams whose text is not stored as their chat's one answer. */
  lost: number;
  /** Answers stored more than once. */
  doubled: number;
}

/** Reads back what the streams stored: each chat must hold exactly its stream's text, once. */
export async function judgeRolling(r: RollingResult, databaseUrl: string): Promise<RollingVerdict> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  const stored = new Map<string, string[]>();
  try {
    const { rows } = await db.query<{ chat_id: string; content: string }>("SELECT chat_id, content FROM messages WHERE role = 'assistant'");
    for (const row of rows) stored.set(row.chat_id, [...(stored.get(row.chat_id) ?? []), row.content]);
  } finally {
    await db.end();
  }
  const ok = r.streams.filter((s) => s.status === 200);
  return {
    streams: r.streams.length,
    refused: r.streams.length - ok.length,
    cut: ok.filter((s) => s.end?.event !== 'done' || s.end.data.stopped).length,
    lost: ok.filter((s) => !(stored.get(s.chatId ?? '') ?? []).includes(s.text)).length,
    doubled: [...stored.values()].filter((answers) => answers.length > 1).length,
  };
}
