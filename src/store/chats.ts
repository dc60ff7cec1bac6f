// Chats. Every function is one statement (one round trip); writes that touch several rows use
// data-modifying CTEs, which Postgres runs atomically, instead of BEGIN/COMMIT round trips.
import { randomUUID } from 'node:crypto';
import { GroupRefused, groupCommit } from '../db/group-commit.ts';
import { prepared } from '../db/prepared.ts';
import type { Queryable } from '../db/types.ts';
import type { ProviderName } from '../providers/types.ts';
import type { ChatDetail, ChatSummary } from '../base/types.ts';
import { FIRST_RUN_TOKEN } from './fencing.ts';
import { insertCallSql } from './llm-calls.ts';
import { insertMessagesSql, messagesParam, messagesRows, type NewMessage } from './messages.ts';
import { createChats, type ChatStartRecord } from './run-groups.ts';
import { chatColumns, toChatSummary, type ChatRow } from './chat-rows.ts';
import { lastRunSql, toLastRun, type LastRunRow } from './llm-call-rows.ts';
import { MESSAGE_COLUMNS, toMessage, type MessageRow } from './message-rows.ts';
import { starJoin } from './stars-sql.ts';
import { cleanText, isIssuedId, trimToNull } from './values.ts';
import { noteRunWrites } from './first-analyze.ts';

export interface NewChat {
  /** Given when the caller must know the id before the row exists (a run registered under it); else a new UUID. */
  id?: string;
  title?: string | null;
  provider?: ProviderName | null;
  model?: string | null;
  additionalSystemPrompt?: string | null;
  enabledTools: string[];
  /** The initial transcript, stored in this order. */
  messages?: readonly NewMessage[];
  /**
   * A running LlmCall for this chat, written in the same statement (a run's start: one round trip for
   * the chat, its input and the call). Needs `provider` and `model`.
   */
  call?: { id: string; instanceId: string | null };
  /** The user the chat belongs to (the built-in admin when not given). */
  owner: string;
}

export interface ChatPatch {
  /** Trimmed; a blank title is refused (the route answers 400 before calling). */
  title?: string;
  /** Trimmed; null or blank clears it. */
  additionalSystemPrompt?: string | null;
  enabledTools?: string[];
}

/** SELECT list + star join reading a chat-shaped relation aliased `c`. */
const SUMMARY = `SELECT ${chatColumns('c')}, star.created_at AS starred_at`;

/**
 * The texts of a run-start statement, which varies only by which optional CTEs it has (the input
 * messages, the running call): each built once, so a call costs no string building and a named
 * statement's lookup (prepared.ts) hashes a string V8 has already hashed.
 */
function variants(build: (withMessages: boolean, withCall: boolean) => string): (withMessages: boolean, withCall: boolean) => string {
  const texts: string[] = [];
  return (withMessages, withCall) => (texts[(withMessages ? 1 : 0) + (withCall ? 2 : 0)] ??= build(withMessages, withCall));
}

/** `, ins AS (…), call AS (…)`: a run's input messages and running call, from parameter `$next` on. */
function inputCtes(chat: string, provider: string, model: string, next: number, withMessages: boolean, withCall: boolean): string {
  let more = '';
  if (withMessages) more += `, ins AS (${insertMessagesSql(chat, `$${next++}`)})`;
  if (withCall) more += `, call AS (${insertCallSql(chat, provider, model, `$${next}`, `$${next + 1}`)})`;
  return more;
}

// Referenced by no one, the input CTEs still run; the FK checks happen at statement end, after the chat row exists.
// A chat created with a running call is a run's start: its fencing token is the first one.
const createChatSql = variants(
  (withMessages, withCall) => `WITH c AS (
       INSERT INTO chats (id, title, initiated_provider, initiated_model, last_used_provider, last_used_model,
                          additional_system_prompt, enabled_tools, run_token, owner_id)
       VALUES ($1, $2, $3::text, $4::text, $3::text, $4::text, $5, $6::text[], ${withCall ? FIRST_RUN_TOKEN : 0}, $7)
       RETURNING *
     )${inputCtes('c', '$3::text', '$4::text', 8, withMessages, withCall)}
     SELECT ${chatColumns('c')}, NULL::timestamptz AS starred_at FROM c`,
);

/**
 * Creates a chat and its initial messages atomically. A new chat is never starred. A run's start
 * (with `call`) joins the other starts of the same turn in one statement (group commit).
 */
export function createChat(db: Queryable, input: NewChat): Promise<ChatSummary> {
  if (!input.call) return createChatAlone(db, input);
  noteRunWrites(db, 1);
  return startChat(db, input);
}

const startChat = groupCommit<NewChat, ChatSummary>(createChatAlone, async (db, inputs) => {
  // A start without provider and model is refused by its own statement's checks, alone.
  if (!inputs.every((i) => i.provider && i.model)) throw new GroupRefused('a start without provider and model');
  const records = inputs.map(toStartRecord);
  const rows = await createChats(db, records);
  return records.map((r) => {
    const row = rows.get(r.id);
    return row ? toChatSummary(row) : new Error(`chat ${r.id} was not created`);
  });
});

function toStartRecord(input: NewChat): ChatStartRecord {
  if (!input.call || !input.provider || !input.model) throw new TypeError('a chat created with a call needs provider and model');
  return {
    id: input.id ?? randomUUID(),
    title: trimToNull(input.title),
    provider: input.provider,
    model: input.model,
    prompt: trimToNull(input.additionalSystemPrompt),
    tools: input.enabledTools,
    msgs: messagesRows(input.messages ?? []),
    call_id: input.call.id,
    instance_id: input.call.instanceId,
    owner_id: input.owner,
  };
}

async function createChatAlone(db: Queryable, input: NewChat): Promise<ChatSummary> {
  const provider = input.provider ?? null;
  const model = input.model ?? null;
  if ((provider === null) !== (model === null)) throw new TypeError('provider and model must be given together');
  const messages = input.messages ?? [];
  const params: unknown[] = [
    input.id ?? randomUUID(),
    trimToNull(input.title),
    provider,
    model,
    trimToNull(input.additionalSystemPrompt),
    input.enabledTools,
    input.owner,
  ];
  if (messages.length) params.push(messagesParam(messages));
  if (input.call) {
    if (provider === null) throw new TypeError('a chat created with a call needs provider and model');
    params.push(input.call.id, input.call.instanceId);
  }
  const { rows } = await db.query<ChatRow>(prepared(db, createChatSql(messages.length > 0, Boolean(input.call))), params);
  return toChatSummary(rows[0]!);
}

const GET_CHAT = `${SUMMARY} FROM chats c ${starJoin('chat', 'c')} WHERE c.id = $1 AND c.owner_id = $2`;

/** The chat when it exists and belongs to `owner` (another user's chat reads as absent). */
export async function getChat(db: Queryable, id: string, owner: string): Promise<ChatSummary | null> {
  if (!isIssuedId(id)) return null;
  const { rows } = await db.query<ChatRow>(prepared(db, GET_CHAT), [id, owner]);
  return rows[0] ? toChatSummary(rows[0]) : null;
}

const GET_CHAT_DETAIL = `${SUMMARY},
            COALESCE((SELECT json_agg(m ORDER BY m.seq)
                        FROM (SELECT seq, ${MESSAGE_COLUMNS} FROM messages WHERE chat_id = c.id) m), '[]'::json)
              AS messages,
            ${lastRunSql('c')}
       FROM chats c ${starJoin('chat', 'c')}
      WHERE c.id = $1 AND c.owner_id = $2`;

/** The chat with its transcript and its last run, read in one statement (one snapshot, one round trip). */
export async function getChatDetail(db: Queryable, id: string, owner: string): Promise<ChatDetail | null> {
  if (!isIssuedId(id)) return null;
  const { rows } = await db.query<ChatRow & { messages: MessageRow[]; last_run: LastRunRow | null }>(prepared(db, GET_CHAT_DETAIL), [id, owner]);
  const row = rows[0];
  return row ? { ...toChatSummary(row), messages: row.messages.map(toMessage), lastRun: toLastRun(row.last_run) } : null;
}

/** Newest updatedAt first. No limit unless given. */
export async function listChats(db: Queryable, opts: { limit?: number; owner: string }): Promise<ChatSummary[]> {
  const { rows } = await db.query<ChatRow>(
    `${SUMMARY} FROM chats c ${starJoin('chat', 'c')}
      WHERE c.owner_id = $2
      ORDER BY c.updated_at DESC, c.id DESC
      LIMIT $1`,
    [opts.limit ?? null, opts.owner],
  );
  return rows.map(toChatSummary);
}

/** Applies the given settings and bumps updatedAt. Null when the chat does not exist. */
export async function updateChat(db: Queryable, id: string, patch: ChatPatch, owner: string): Promise<ChatSummary | null> {
  if (!isIssuedId(id)) return null;
  const params: unknown[] = [id, owner];
  const sets = ['updated_at = now()'];
  if (patch.title !== undefined) {
    const title = trimToNull(patch.title);
    if (title === null) throw new TypeError('title must not be blank');
    params.push(title);
    sets.push(`title = $${params.length}`);
  }
  if (patch.additionalSystemPrompt !== undefined) {
    params.push(trimToNull(patch.additionalSystemPrompt));
    sets.push(`additional_system_prompt = $${params.length}`);
  }
  if (patch.enabledTools !== undefined) {
    params.push(patch.enabledTools);
    sets.push(`enabled_tools = $${params.length}::text[]`);
  }
  return oneChat(db, `UPDATE chats SET ${sets.join(', ')} WHERE id = $1 AND owner_id = $2 RETURNING *`, params);
}

/** Deletes the chat, its messages (cascade) and its project memberships. False when unknown. */
export async function deleteChat(db: Queryable, id: string, owner: string): Promise<boolean> {
  if (!isIssuedId(id)) return false;
  const { rows } = await db.query<{ n: number }>(
    `WITH d AS (DELETE FROM chats WHERE id = $1 AND owner_id = $2 RETURNING id),
          m AS (DELETE FROM project_members WHERE item_type = 'chat' AND item_id IN (SELECT id FROM d))
     SELECT count(*)::int AS n FROM d`,
    [id, owner],
  );
  return rows[0]!.n > 0;
}

/**
 * A run's start on an existing chat, in one statement: its new input appended, the provider use
 * recorded (lastUsed* always, initiated* only while unset: the spec's "first call, successful or
 * failed"; updatedAt bumped) and, with `call`, the running LlmCall. False when the chat does not exist
 * (then nothing is written).
 */
export async function continueChat(db: Queryable, input: ContinueChat): Promise<boolean> {
  return (await startChatRun(db, input)) !== null;
}

export interface ContinueChat {
  chatId: string;
  provider: ProviderName;
  model: string;
  messages: readonly NewMessage[];
  /**
   * `messages` is the client's whole history (its assistant messages left out): only those not yet in
   * the stored transcript are appended, each matched in order by role and content. Else every one is.
   */
  supplied?: boolean;
  call: { id: string; instanceId: string | null } | null;
  /** The user the chat belongs to: another user's chat reads as absent (the built-in admin when not given). */
  owner: string;
}

// The function of sql/012_start_in_one_statement.sql: finding the new messages of a supplied history
// is a sequential walk, which no single data-modifying CTE can do. The running call is inserted beside
// it (insertCallSql), not by it, so that it keeps the token the function took.
const startChatRunSql = variants((_, withCall) =>
  withCall
    ? `WITH run AS MATERIALIZED (SELECT $1::text AS id, $2::text AS owner_id, start_chat_run($1, $2, $3, $4, $5::json, $6, NULL, NULL) AS run_token),
            chat AS (SELECT * FROM run WHERE run_token IS NOT NULL),
            call AS (${insertCallSql('chat', '$3::text', '$4::text', '$7', '$8')})
       SELECT run_token AS token FROM run`
    : 'SELECT start_chat_run($1, $2, $3, $4, $5::json, $6, NULL, NULL) AS token',
);

/**
 * continueChat that also starts a new run's fencing: the chat's token goes one up in the same
 * statement and is returned (null when the chat does not exist). The run's later writes carry it.
 */
export async function startChatRun(db: Queryable, input: ContinueChat): Promise<number | null> {
  if (!isIssuedId(input.chatId)) return null;
  if (input.call) noteRunWrites(db, 1);
  const params: unknown[] = [input.chatId, input.owner, input.provider, input.model, messagesParam(input.messages), input.supplied === true];
  if (input.call) params.push(input.call.id, input.call.instanceId);
  const { rows } = await db.query<{ token: number | null }>(prepared(db, startChatRunSql(false, Boolean(input.call))), params);
  return rows[0]!.token;
}

/**
 * Sets the title only while it is still empty, atomically, so a title set by the user while a
 * suggestion was generating is never overwritten. Returns the chat as it then is, or null if unknown.
 */
export async function setChatTitleIfEmpty(db: Queryable, chatId: string, title: string, owner: string): Promise<ChatSummary | null> {
  if (!isIssuedId(chatId)) return null;
  const clean = trimToNull(title);
  if (clean === null) return getChat(db, chatId, owner);
  const updated = await oneChat(
    db,
    `UPDATE chats SET title = $2, updated_at = now() WHERE id = $1 AND owner_id = $3 AND COALESCE(btrim(title), '') = '' RETURNING *`,
    [chatId, cleanText(clean), owner],
  );
  // Not updated: the chat has a title, or another call set one while this statement waited for its
  // row lock. Reading it in the same statement would use the snapshot from before that call committed
  // (READ COMMITTED takes one per statement) and hand back the old, empty title; a new statement sees it.
  return updated ?? getChat(db, chatId, owner);
}

/** Runs a data-modifying statement yielding chat rows and returns the first as a summary with its star. */
async function oneChat(db: Queryable, modify: string, params: unknown[]): Promise<ChatSummary | null> {
  const { rows } = await db.query<ChatRow>(`WITH c AS (${modify}) ${SUMMARY} FROM c ${starJoin('chat', 'c')}`, params);
  return rows[0] ? toChatSummary(rows[0]) : null;
}
