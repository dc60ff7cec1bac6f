// What the drain, overload and rolling-restart tests share: a service process on a scratch database
// (Postgres when TEST_DATABASE_URL is set, else a fresh embedded one), streams read to their end,
// and the stored answer of a chat.
import assert from 'node:assert/strict';
import type pg from 'pg';
import { openDatabase } from '../../src/db/pool.ts';
import { createScratchPostgres, migratedEmbeddedDataDir } from './db.ts';
import { simCompletion, startService, type ServiceProcess } from './process.ts';
import { readSse, sim, waitFor, type SseEvent } from './server.ts';

/** Environment of a scratch database for one or more service processes, and its cleanup. */
export async function scratchDatabaseEnv(): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> {
  if (process.env.TEST_DATABASE_URL) {
    const scratch = await createScratchPostgres();
    return { env: { DATABASE_URL: scratch.url }, cleanup: scratch.drop };
  }
  const { dataDir, cleanup } = await migratedEmbeddedDataDir();
  return { env: { DATA_DIR: dataDir }, cleanup };
}

/** A service process on its own scratch database; `stop()` kills it (if alive) and drops the database. */
export async function startDrainService(env: Record<string, string>): Promise<{ service: ServiceProcess; dbEnv: Record<string, string>; stop(): Promise<void> }> {
  const db = await scratchDatabaseEnv();
  try {
    const service = await startService({ PORT: '0', ACTOR_THREADS: '1', ...db.env, ...env });
    return {
      service,
      dbEnv: db.env,
      async stop() {
        if (service.child.exitCode === null && service.child.signalCode === null) service.child.kill('SIGKILL');
        await service.exited;
        await db.cleanup();
      },
    };
  } catch (err) {
    await db.cleanup();
    throw err;
  }
}

export interface LiveStream {
  res: Response;
  /** Its meta event (every stream opens with one). */
  meta: Promise<SseEvent>;
  /** Settles at the first delta (or the end, if none comes). */
  firstDelta: Promise<void>;
  /** Every event, once the stream has ended. */
  events: Promise<SseEvent[]>;
}

/** Opens a persisted chat stream of `deltas` deltas at `rate` per second on `url`, with optional headers. */
export async function openChatStream(url: string, deltas: number, rate: number, headers: Record<string, string> = {}, hold: { gate?: string; gateAfter?: number } = {}): Promise<LiveStream> {
  const res = await fetch(`${url}/v1/chat-completions/stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: simCompletion(sim({ deltas, rate, ...hold })),
  });
  assert.equal(res.status, 200, `stream start: ${res.status} ${res.status === 200 ? '' : await res.text()}`);
  return follow(res);
}

/** Reads an SSE response to its end; `onEvent` sees each event as it comes. */
export function follow(res: Response, onEvent?: (ev: SseEvent) => void): LiveStream {
  let delta!: () => void;
  let first!: (ev: SseEvent) => void;
  const firstDelta = new Promise<void>((r) => (delta = r));
  const meta = new Promise<SseEvent>((r) => (first = r));
  const events = readSse(res, new AbortController(), undefined, (ev) => {
    if (ev.event === 'meta') first(ev);
    if (ev.event === 'delta') delta();
    onEvent?.(ev);
  });
  void events.finally(() => delta()).catch(() => {});
  return { res, meta, firstDelta, events };
}

/** A chat's assistant messages and LlmCalls, read from the database itself (the service may be gone). */
export async function storedRun(dbEnv: Record<string, string>, chatId: string) {
  const db = await openDatabase({ DATABASE_URL: dbEnv.DATABASE_URL, DATA_DIR: dbEnv.DATA_DIR ?? '' });
  try {
    const q = async <R extends pg.QueryResultRow>(text: string) => (await db.pool.query<R>(text, [chatId])).rows;
    return {
      answers: await q<{ content: string; metadata: Record<string, unknown> | null }>(
        "SELECT content, metadata FROM messages WHERE chat_id = $1 AND role = 'assistant' ORDER BY created_at",
      ),
      calls: await q<{ status: string; error: string | null }>('SELECT status, error FROM llm_calls WHERE chat_id = $1 ORDER BY started_at'),
    };
  } finally {
    await db.close();
  }
}

export const deltaText = (events: SseEvent[]) => events.filter((e) => e.event === 'delta').map((e) => e.data.text).join('');
export const chatIdOf = (events: SseEvent[]) => events.find((e) => e.event === 'meta')!.data.chatId as string;

/** The chat as GET /v1/chats/:id answers it (messages with metadata, lastRun). */
export async function chatDetail(url: string, chatId: string): Promise<any> {
  const res = await fetch(`${url}/v1/chats/${chatId}`);
  assert.equal(res.status, 200);
  return (await res.json()).chat;
}

/** The chat's assistant messages. */
export async function assistantMessages(url: string, chatId: string): Promise<{ content: string; metadata: Record<string, unknown> | null }[]> {
  return (await chatDetail(url, chatId)).messages.filter((m: { role: string }) => m.role === 'assistant');
}

/** Waits until GET /ready answers `status`. */
export const readyIs = (url: string, status: number) =>
  waitFor(async () => (await fetch(`${url}/ready`).then((r) => r.status, () => 0)) === status, 30_000, `/ready ${status}`);

/** The value of a Prometheus sample line on /metrics (0 when absent). */
export async function metric(url: string, sample: string): Promise<number> {
  const text = await fetch(`${url}/metrics`).then((r) => r.text());
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line ? Number(line.slice(sample.length + 1)) : 0;
}
