// The multi-row statements of group commit (src/db/group-commit.ts) for the two writes every
// persisted run makes: its start (a chat created with its input and its running LlmCall) and its
// answer (the message stored with its LlmCall ended, under the fencing token). Each takes one JSON
// parameter with a record per member and answers a row per member, so one statement serves any
// group size and is a single named statement. One statement is one transaction: a member's rows are
// atomic as they are alone, and the whole group's are too.
import { prepared } from '../db/prepared.ts';
import type { Queryable } from '../db/types.ts';
import { chatColumns, type ChatRow } from './chat-rows.ts';
import { FIRST_RUN_TOKEN } from './fencing.ts';
import { MESSAGE_COLUMNS, type MessageRow } from './message-rows.ts';
import { spentSql } from './day-tokens.ts';
import { toJson } from './values.ts';

/** A chat created by a run's start, as createChat's statement takes it (values already cleaned). */
export interface ChatStartRecord {
  id: string;
  title: string | null;
  provider: string;
  model: string;
  prompt: string | null;
  tools: string[];
  /** messagesRows(): ids made, `ord` fixes the order. */
  msgs: unknown[];
  call_id: string;
  instance_id: string | null;
  owner_id: string;
}

// `ord` keeps each member's rows in its own order; messages of one chat keep theirs (seq follows the
// insert order). The FK checks of messages and calls run at statement end, after the chats exist.
export const CREATE_CHATS = `WITH input AS (
       SELECT * FROM json_to_recordset($1::json)
         AS x(ord int, id text, title text, provider text, model text, prompt text, tools json, msgs json,
              call_id text, instance_id text, owner_id text)
     ),
     c AS (
       INSERT INTO chats (id, title, initiated_provider, initiated_model, last_used_provider, last_used_model,
                          additional_system_prompt, enabled_tools, run_token, owner_id)
       SELECT id, title, provider, model, provider, model, prompt,
              ARRAY(SELECT json_array_elements_text(tools)), ${FIRST_RUN_TOKEN}, owner_id
         FROM input ORDER BY ord
       RETURNING *
     ),
     ins AS (
       INSERT INTO messages (id, chat_id, role, content, name, metadata)
       SELECT m.id, i.id, m.role, m.content, m.name, m.metadata
         FROM input i, json_to_recordset(i.msgs) AS m(id text, ord integer, role text, content text, name text, metadata jsonb)
        ORDER BY i.ord, m.ord
     ),
     call AS (
       INSERT INTO llm_calls (id, chat_id, provider, model, instance_id, owner_id, checkpoint_token)
       SELECT call_id, id, provider, model, instance_id, owner_id, ${FIRST_RUN_TOKEN} FROM input
     )
     SELECT ${chatColumns('c')}, NULL::timestamptz AS starred_at FROM c`;

/** Creates every member's chat with its input and running call; rows by chat id. */
export async function createChats(db: Queryable, records: readonly ChatStartRecord[]): Promise<Map<string, ChatRow>> {
  const { rows } = await db.query<ChatRow>(prepared(db, CREATE_CHATS), [toJson(records.map((r, ord) => ({ ord, ...r })))]);
  return new Map(rows.map((r) => [r.id, r]));
}

/** finishLlmCallWithMessage's values, cleaned, as its statement takes them. */
export interface FinishRecord {
  call_id: string;
  chat_id: string | null;
  msg_id: string;
  content: string;
  metadata: Record<string, unknown> | null;
  latency: number;
  input_tokens: number | null;
  output_tokens: number | null;
  total_tokens: number | null;
  /** The cache's share of input_tokens, and the cost in USD (019_cost.sql). */
  cache_read: number | null;
  cache_write: number | null;
  cost: number | null;
  status: string;
  store: boolean;
  token: number | null;
  error: string | null;
}

export type FinishRow = MessageRow & { call_found: number; stale: number };

// As FINISH_WITH_MESSAGE (llm-calls.ts), per member: `held` locks every member's chat (in id order,
// so two groups cannot deadlock on each other's rows) and reads its latest version; a member whose
// token is no longer its chat's is `stale` and writes nothing; the others store their message (when
// their chat and call exist) and end their call. The caller keeps one member per chat in a group.
//
// Chats and calls are looked up by `id = ANY (ARRAY(...))`, never by joining or `IN (SELECT ...)`:
// the planner takes json_to_recordset for 100 rows, and for 100 keys against a few thousand rows the
// cached generic plan of a named statement hashed the keys and read the whole table (a seq scan of
// `chats` per answer, its cost growing with every chat ever stored: 6 ms at 20,000 chats, most of
// Postgres's CPU per persisted run in the bench). An array of keys is probed through the primary key
// at any size. test/store/group-commit.test.ts pins the plans.
export const FINISH_MANY = `WITH input AS (
       SELECT * FROM json_to_recordset($1::json)
         AS x(ord int, call_id text, chat_id text, msg_id text, content text, metadata jsonb, latency int,
              input_tokens int, output_tokens int, total_tokens int, cache_read int, cache_write int, cost double precision,
              status text, store boolean, token int, error text)
     ),
     held AS (SELECT id, run_token FROM chats WHERE id = ANY (ARRAY(SELECT chat_id FROM input)) ORDER BY id FOR UPDATE),
     stale AS (SELECT i.ord FROM input i JOIN held h ON h.id = i.chat_id WHERE i.token IS NOT NULL AND h.run_token <> i.token),
     ok AS (SELECT * FROM input i WHERE NOT EXISTS (SELECT 1 FROM stale s WHERE s.ord = i.ord)),
     writing AS (
       SELECT ok.* FROM ok
        WHERE ok.store AND ok.call_id = ANY (ARRAY(SELECT l.id FROM llm_calls l WHERE l.id = ANY (ARRAY(SELECT call_id FROM ok))))
     ),
     chat AS (
       UPDATE chats SET updated_at = now() WHERE id = ANY (ARRAY(SELECT chat_id FROM writing)) RETURNING id
     ),
     msg AS (
       INSERT INTO messages (id, chat_id, role, content, metadata)
       SELECT w.msg_id, chat.id, 'assistant', w.content, w.metadata FROM writing w JOIN chat ON chat.id = w.chat_id
        ORDER BY w.ord
       RETURNING ${MESSAGE_COLUMNS}
     ),
     call AS (
       UPDATE llm_calls l
          SET status = ok.status, finished_at = now(), error = ok.error,
              latency_ms = ok.latency, input_tokens = ok.input_tokens, output_tokens = ok.output_tokens,
              total_tokens = ok.total_tokens, cache_read_tokens = ok.cache_read, cache_write_tokens = ok.cache_write,
              cost = ok.cost, message_id = (SELECT msg.id FROM msg WHERE msg.id = ok.msg_id)
         FROM ok WHERE l.id = ANY (ARRAY(SELECT call_id FROM ok)) AND l.id = ok.call_id
       RETURNING l.id, l.owner_id, l.started_at, l.total_tokens, l.cost
     ),
     spent AS (${spentSql('call')})
     SELECT i.ord, msg.*,
            (SELECT count(*) FROM call WHERE call.id = i.call_id)::int AS call_found,
            (SELECT count(*) FROM stale WHERE stale.ord = i.ord)::int AS stale,
            (SELECT count(*) FROM held)::int AS held
       FROM input i LEFT JOIN msg ON msg.id = i.msg_id
      ORDER BY i.ord`;

/** Ends every member's call with its answer; a row per member, in order. */
export async function finishCalls(db: Queryable, records: readonly FinishRecord[]): Promise<FinishRow[]> {
  const { rows } = await db.query<FinishRow>(prepared(db, FINISH_MANY), [toJson(records.map((r, ord) => ({ ord, ...r })))]);
  return rows;
}
