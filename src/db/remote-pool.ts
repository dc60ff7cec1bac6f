// Database access for worker threads when the database is the embedded one. PGlite takes exactly
// one connection per process (see embedded.ts), so a worker cannot open its own pool: its queries
// travel over a MessagePort to the main thread's pool. Transactions keep working because a
// `connect()` here holds a real client there until `release()`.
import type { MessagePort } from 'node:worker_threads';
import type pg from 'pg';

type Request =
  | { id: number; op: 'query'; clientId: number; text: string; values?: unknown[] }
  | { id: number; op: 'connect' }
  | { id: number; op: 'release'; clientId: number; destroy: boolean };

type Reply = { id: number; ok: true; rows?: unknown[]; rowCount?: number | null; clientId?: number } | { id: number; ok: false; message: string; code?: string };

type DistributiveOmit<T, K extends keyof any> = T extends unknown ? Omit<T, K> : never;

class RemoteQueryError extends Error {
  code: string | undefined;
  constructor(message: string, code?: string) {
    super(message);
    this.code = code;
  }
}

/** Worker side: a pg.Pool look-alike (query, connect/release) backed by the main thread. */
export function remotePool(port: MessagePort): pg.Pool {
  let seq = 0;
  const waiting = new Map<number, { resolve(r: Reply): void; reject(e: Error): void }>();
  port.on('message', (reply: Reply) => {
    const w = waiting.get(reply.id);
    if (!w) return;
    waiting.delete(reply.id);
    if (reply.ok) w.resolve(reply);
    else w.reject(new RemoteQueryError(reply.message, reply.code));
  });
  port.unref();
  const call = (msg: DistributiveOmit<Request, 'id'>): Promise<Reply & { ok: true }> =>
    new Promise((resolve, reject) => {
      const id = ++seq;
      waiting.set(id, { resolve: resolve as (r: Reply) => void, reject });
      port.postMessage({ ...msg, id });
    });
  const query = async (clientId: number, text: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
    const q = typeof text === 'string' ? { text, values } : text;
    const r = await call({ op: 'query', clientId, text: q.text, values: q.values });
    return { rows: r.rows ?? [], rowCount: r.rowCount ?? null };
  };
  const pool = {
    query: (text: string, values?: unknown[]) => query(0, text, values),
    async connect() {
      const { clientId } = await call({ op: 'connect' });
      return {
        query: (text: string, values?: unknown[]) => query(clientId!, text, values),
        release: (err?: unknown) => void call({ op: 'release', clientId: clientId!, destroy: Boolean(err) }),
      };
    },
    on: () => pool,
    end: async () => {},
  };
  return pool as unknown as pg.Pool;
}

/** Main side: answers one worker's queries on `pool`. Returns a cleanup for when the worker dies. */
export function servePool(port: MessagePort, pool: pg.Pool): () => Promise<void> {
  const clients = new Map<number, pg.PoolClient>();
  let nextClient = 1;
  port.on('message', async (req: Request) => {
    try {
      if (req.op === 'query') {
        const target = req.clientId ? clients.get(req.clientId) : pool;
        if (!target) throw new Error('database client was released');
        const r = await target.query(req.text, req.values);
        port.postMessage({ id: req.id, ok: true, rows: r.rows, rowCount: r.rowCount });
      } else if (req.op === 'connect') {
        const client = await pool.connect();
        const clientId = nextClient++;
        clients.set(clientId, client);
        port.postMessage({ id: req.id, ok: true, clientId });
      } else {
        const client = clients.get(req.clientId);
        clients.delete(req.clientId);
        client?.release(req.destroy);
        port.postMessage({ id: req.id, ok: true });
      }
    } catch (err) {
      const e = err as { message?: string; code?: string };
      port.postMessage({ id: req.id, ok: false, message: e.message ?? String(err), code: e.code });
    }
  });
  return async () => {
    // A worker that died inside a transaction must not hand a half-open transaction to the next user.
    for (const client of clients.values()) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
    clients.clear();
    port.close();
  };
}
