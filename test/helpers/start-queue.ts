// Filling the admission's start queue from a test (Postgres): a lock on `chats` held from a connection of its
// own keeps each new chat's first statement waiting, so the starts under way stay in flight
// (css_start_backlog) and the next ones wait their turn (css_starts_waiting); and the gauges that say so.
import pg from 'pg';
import type { TestServer } from './server.ts';
import { ADMIN_TOKEN } from './users.ts';

export interface ChatsLock {
  /** Lets the waiting statements go. */
  release(): Promise<void>;
  /** Releases the lock if it is still held, and closes its connection. */
  close(): Promise<void>;
}

/** Takes the lock on `chats` of the database at `url`. */
export async function lockChats(url: string): Promise<ChatsLock> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  let held = false;
  const release = async () => {
    if (!held) return;
    held = false;
    await db.query('ROLLBACK');
  };
  try {
    await db.query('BEGIN');
    held = true;
    await db.query('LOCK TABLE chats IN SHARE MODE');
  } catch (err) {
    await db.end();
    throw err;
  }
  return {
    release,
    close: async () => {
      await release().catch(() => {});
      await db.end();
    },
  };
}

/** A sample of the server's /metrics (`name` with its labels, if any), read as the admin. */
export async function gauge(t: TestServer, name: string): Promise<number> {
  const text = (await t.call('GET', '/metrics', undefined, { authorization: `Bearer ${ADMIN_TOKEN}` })).body as string;
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}
