// Users and their API keys. A key is stored only as its sha-256 (a key has 32 random bytes, so no
// salt or slow hash is needed: there is nothing to guess); one current key per user, replaced on
// rotation. The built-in admin has no row (src/auth/caller.ts).
import { randomUUID } from 'node:crypto';
import type { Queryable } from '../db/types.ts';
import { iso } from './values.ts';

export interface User {
  id: string;
  name: string;
  createdAt: string;
  disabled: boolean;
  maxActiveRuns: number | null;
  tokensPerDay: number | null;
  /** USD per UTC day (sql/019_cost.sql). */
  costPerDay: number | null;
  source: 'key' | 'jwt';
}

export interface UserPatch {
  name?: string;
  maxActiveRuns?: number | null;
  tokensPerDay?: number | null;
  costPerDay?: number | null;
  disabled?: boolean;
}

interface Row {
  id: string;
  name: string;
  created_at: Date;
  disabled: boolean;
  max_active_runs: number | null;
  tokens_per_day: number | null;
  cost_per_day: number | null;
  source: 'key' | 'jwt';
}

const COLUMNS = 'id, name, created_at, disabled, max_active_runs, tokens_per_day, cost_per_day, source';

const toUser = (r: Row): User => ({
  id: r.id,
  name: r.name,
  createdAt: iso(r.created_at),
  disabled: r.disabled,
  maxActiveRuns: r.max_active_runs,
  tokensPerDay: r.tokens_per_day,
  costPerDay: r.cost_per_day,
  source: r.source,
});

/** A user with an API key (its hash given). */
export async function createUser(
  db: Queryable,
  input: { name: string; maxActiveRuns: number | null; tokensPerDay: number | null; costPerDay?: number | null; keyHash: Buffer },
): Promise<User> {
  const { rows } = await db.query<Row>(
    `INSERT INTO users (id, name, max_active_runs, tokens_per_day, cost_per_day, source, key_hash) VALUES ($1, $2, $3, $4, $5, 'key', $6) RETURNING ${COLUMNS}`,
    [randomUUID(), input.name, input.maxActiveRuns, input.tokensPerDay, input.costPerDay ?? null, input.keyHash],
  );
  return toUser(rows[0]!);
}

/**
 * The user bound to a JWT `sub`, created at its first use with `name`. Null when that user is
 * disabled. One statement, so two first requests at once create one user.
 */
export async function userForJwtSub(db: Queryable, sub: string, name: string): Promise<User | null> {
  const { rows } = await db.query<Row>(
    `INSERT INTO users (id, name, source, jwt_sub) VALUES ($1, $2, 'jwt', $3)
     ON CONFLICT (jwt_sub) DO UPDATE SET jwt_sub = EXCLUDED.jwt_sub
     RETURNING ${COLUMNS}`,
    [randomUUID(), name, sub],
  );
  const user = toUser(rows[0]!);
  return user.disabled ? null : user;
}

export async function listUsers(db: Queryable): Promise<User[]> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM users ORDER BY created_at, id`);
  return rows.map(toUser);
}

export async function getUser(db: Queryable, id: string): Promise<User | null> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM users WHERE id = $1`, [id]);
  return rows[0] ? toUser(rows[0]) : null;
}

/** The enabled user whose current key has this hash, or null. */
export async function userByKeyHash(db: Queryable, keyHash: Buffer): Promise<User | null> {
  const { rows } = await db.query<Row>(`SELECT ${COLUMNS} FROM users WHERE key_hash = $1 AND NOT disabled`, [keyHash]);
  return rows[0] ? toUser(rows[0]) : null;
}

/** Applies the fields given; null when the user does not exist. */
export async function updateUser(db: Queryable, id: string, patch: UserPatch): Promise<User | null> {
  const params: unknown[] = [id];
  const sets: string[] = [];
  const set = (column: string, value: unknown) => {
    params.push(value);
    sets.push(`${column} = $${params.length}`);
  };
  if (patch.name !== undefined) set('name', patch.name);
  if (patch.maxActiveRuns !== undefined) set('max_active_runs', patch.maxActiveRuns);
  if (patch.tokensPerDay !== undefined) set('tokens_per_day', patch.tokensPerDay);
  if (patch.costPerDay !== undefined) set('cost_per_day', patch.costPerDay);
  if (patch.disabled !== undefined) set('disabled', patch.disabled);
  if (sets.length === 0) return getUser(db, id);
  const { rows } = await db.query<Row>(`UPDATE users SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`, params);
  return rows[0] ? toUser(rows[0]) : null;
}

/** Replaces the user's key: every earlier key stops matching. False when the user does not exist. */
export async function replaceKey(db: Queryable, id: string, keyHash: Buffer): Promise<boolean> {
  const { rowCount } = await db.query('UPDATE users SET key_hash = $2 WHERE id = $1', [id, keyHash]);
  return rowCount === 1;
}

/**
 * Deletes the user with their chats (messages by cascade), searches, stars and Idempotency-Keys, in
 * one statement. Their LlmCalls stay: usage records outlive transcripts, as they outlive a deleted chat.
 */
export async function deleteUser(db: Queryable, id: string): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>(
    `WITH u AS (DELETE FROM users WHERE id = $1 RETURNING id),
          c AS (DELETE FROM chats WHERE owner_id IN (SELECT id FROM u)),
          s AS (DELETE FROM searches WHERE owner_id IN (SELECT id FROM u)),
          p AS (DELETE FROM project_members WHERE owner_id IN (SELECT id FROM u)),
          k AS (DELETE FROM idempotency_keys WHERE owner_id IN (SELECT id FROM u))
     SELECT count(*)::int AS n FROM u`,
    [id],
  );
  return rows[0]!.n > 0;
}
