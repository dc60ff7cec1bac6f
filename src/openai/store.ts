// The stored responses of the OpenAI-compatible API (sql/020_openai_responses.sql): one statement each.
import type { Queryable } from '../db/types.ts';
import type { ToolCallRequest, Usage } from '../providers/types.ts';
import type { RunMessage } from '../domain/schemas.ts';
import { INSTANCE_LOST } from '../store/recovery.ts';

export type ResponseStatus = 'queued' | 'in_progress' | 'completed' | 'failed' | 'cancelled' | 'incomplete';

/** Not ended: its run waits in the start queue (`queued`, background responses only) or runs. */
export const isGoing = (s: { status: ResponseStatus }): boolean => s.status === 'in_progress' || s.status === 'queued';

/** SQL: the row's response has not ended (a row stores no `queued`: see queuedOf). */
const GOING = `status = 'in_progress'`;

/**
 * SQL: the response of row `r` reads `queued`: a background response whose run has not stored its start yet
 * (its LlmCall, which the run's start writes: actors/run-storage.ts, prepareChat). Derived, not stored: the
 * run's start is already written once, so the row needs no second write when it starts.
 */
const queuedOf = (r: string) =>
  `(${r}.status = 'in_progress' AND (${r}.request->>'background')::boolean AND NOT EXISTS (SELECT 1 FROM llm_calls c WHERE c.id = ${r}.call_id)) AS queued`;

/** What the response object repeats of its request. */
export interface ResponseRequest {
  model: string;
  instructions: string | null;
  metadata: Record<string, unknown> | null;
  tools: unknown[];
  tool_choice: unknown;
  temperature: number | null;
  top_p: number | null;
  max_output_tokens: number | null;
  background: boolean;
}

export interface StoredResponse {
  id: string;
  owner: string;
  chatId: string;
  callId: string;
  previousResponseId: string | null;
  status: ResponseStatus;
  input: RunMessage[];
  /** It began a new chat from an earlier turn: the history it inherited (the chain before it is not read). */
  inherited: RunMessage[] | null;
  request: ResponseRequest;
  outputText: string | null;
  toolCalls: ToolCallRequest[] | null;
  deltas: number[] | null;
  /** A takeover's continuation: how many of `deltas` are the lost run's own, cut as it streamed them. */
  resumedDeltas: number | null;
  usage: Usage | null;
  error: string | null;
  createdAt: number;
}

interface Row {
  id: string;
  owner_id: string;
  chat_id: string;
  call_id: string;
  previous_response_id: string | null;
  status: ResponseStatus;
  queued: boolean;
  input: RunMessage[];
  inherited: RunMessage[] | null;
  request: ResponseRequest;
  output_text: string | null;
  tool_calls: ToolCallRequest[] | null;
  deltas: number[] | null;
  resumed_deltas: number | null;
  usage: Usage | null;
  error: string | null;
  created_at: Date | string;
}

const toResponse = (r: Row): StoredResponse => ({
  id: r.id,
  owner: r.owner_id,
  chatId: r.chat_id,
  callId: r.call_id,
  previousResponseId: r.previous_response_id,
  status: r.queued ? 'queued' : r.status,
  input: r.input,
  inherited: r.inherited,
  request: r.request,
  outputText: r.output_text,
  toolCalls: r.tool_calls,
  deltas: r.deltas,
  resumedDeltas: r.resumed_deltas,
  usage: r.usage,
  error: r.error,
  createdAt: Math.floor(new Date(r.created_at).getTime() / 1000),
});

export async function insertResponse(
  db: Queryable,
  r: Pick<StoredResponse, 'id' | 'owner' | 'chatId' | 'callId' | 'previousResponseId' | 'input' | 'inherited' | 'request'> & { instanceId: string },
): Promise<void> {
  await db.query(
    `INSERT INTO openai_responses (id, owner_id, chat_id, call_id, instance_id, previous_response_id, status, input, request, inherited)
     VALUES ($1, $2, $3, $4, $5, $6, 'in_progress', $7::jsonb, $8::jsonb, $9::jsonb)`,
    [r.id, r.owner, r.chatId, r.callId, r.instanceId, r.previousResponseId, JSON.stringify(r.input), JSON.stringify(r.request), r.inherited && JSON.stringify(r.inherited)],
  );
}

export interface ResponseEnd {
  status: Exclude<ResponseStatus, 'queued' | 'in_progress'>;
  outputText: string;
  toolCalls: ToolCallRequest[] | null;
  /** Null: the text's cuts are not known (an end read from the LlmCall): a resume past its first delta is lost. */
  deltas: number[] | null;
  /** A takeover's continuation: how many of its first deltas are the lost run's own (StoredResponse.resumedDeltas). */
  resumedDeltas?: number | null;
  usage: Usage | null;
  error: string | null;
}

const SET_END = `status = $2, output_text = $3, tool_calls = $4::jsonb, deltas = $5::jsonb, usage = $6::jsonb, error = $7, resumed_deltas = $8, completed_at = now()`;

const endParams = (end: ResponseEnd) => [
  end.status,
  end.outputText,
  end.toolCalls && JSON.stringify(end.toolCalls),
  JSON.stringify(end.deltas),
  end.usage && JSON.stringify(end.usage),
  end.error,
  end.resumedDeltas ?? null,
];

/** The run's end, once: a response that already ended (recovered as lost meanwhile) keeps its end. */
export async function finishResponse(db: Queryable, id: string, end: ResponseEnd): Promise<void> {
  await db.query(`UPDATE openai_responses SET ${SET_END} WHERE id = $1 AND ${GOING}`, [id, ...endParams(end)]);
}

/**
 * The end of the response whose run was LlmCall `lostCallId`, written by the peer that continued that run
 * after its instance was lost (a takeover): the id of the response ended, or null when none was waiting.
 */
export async function finishContinuedResponse(db: Queryable, lostCallId: string, end: ResponseEnd): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>(`UPDATE openai_responses SET ${SET_END} WHERE call_id = $1 AND ${GOING} RETURNING id`, [lostCallId, ...endParams(end)]);
  return rows[0]?.id ?? null;
}

/** The caller's response; another user's reads as absent. */
export async function getResponse(db: Queryable, id: string, owner: string): Promise<StoredResponse | null> {
  const { rows } = await db.query<Row>(`SELECT r.*, ${queuedOf('r')} FROM openai_responses r WHERE r.id = $1 AND r.owner_id = $2`, [id, owner]);
  return rows[0] ? toResponse(rows[0]) : null;
}

/** The newest response of a chat (the one a continuation must name). */
export async function latestOfChat(db: Queryable, chatId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM openai_responses WHERE chat_id = $1 ORDER BY created_at DESC, id DESC LIMIT 1', [chatId]);
  return rows[0]?.id ?? null;
}

/**
 * The turns up to and including `id`, oldest first (its chain of previous_response_id), back to the first
 * one that inherited its history (the history before it is that one's `inherited`).
 */
export async function responseChain(db: Queryable, id: string, owner: string): Promise<StoredResponse[]> {
  const { rows } = await db.query<Row & { depth: number }>(
    `WITH RECURSIVE chain AS (
       SELECT r.*, 0 AS depth FROM openai_responses r WHERE r.id = $1 AND r.owner_id = $2
       UNION ALL
       SELECT p.*, chain.depth + 1 FROM openai_responses p JOIN chain ON p.id = chain.previous_response_id AND p.owner_id = $2 AND chain.inherited IS NULL
     )
     SELECT chain.*, ${queuedOf('chain')} FROM chain ORDER BY depth DESC`,
    [id, owner],
  );
  return rows.map(toResponse);
}

/** How long an instance may go without a heartbeat before it counts as dead (its row's own span, else this). */
const DEAD_AFTER_MS = 15_000;

/** SQL: the instance `id` still beats (`deadAfter`: the parameter holding DEAD_AFTER_MS). */
const alive = (id: string, deadAfter: string) => `EXISTS (SELECT 1 FROM instances i WHERE i.id = ${id}
          AND i.last_beat >= now() - make_interval(secs => coalesce(i.dead_after_ms, ${deadAfter}::double precision) / 1000))`;

interface LostCall {
  status: string;
  error: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  total_tokens: number | null;
  text: string | null;
}

/**
 * A response still going (`in_progress`, `queued`) whose run is nowhere because its instance died before writing its end: its
 * end is read from its LlmCall (failed "instance lost" by the recovery), or from the call that continued it
 * after a takeover once the peer that ran it died too, and the chat's answer. Null otherwise: the call still
 * runs, or it ended on a live instance, which writes the end itself in a moment (a continuation's with the
 * cuts of its deltas, which the LlmCall does not hold).
 */
export async function settleLost(db: Queryable, s: StoredResponse): Promise<StoredResponse | null> {
  const { rows } = await db.query<LostCall & { writer_alive: boolean }>(
    `SELECT c.status, c.error, c.input_tokens, c.output_tokens, c.total_tokens,
            (SELECT m.content FROM messages m WHERE m.chat_id = $2 AND m.role = 'assistant' ORDER BY m.seq DESC LIMIT 1) AS text,
            (c.continues_call_id = $1 AND ${alive('c.instance_id', '$4')}) AS writer_alive
       FROM llm_calls c
      WHERE (c.id = $1 AND c.status = 'failed' AND c.error LIKE $3 || '%') OR c.continues_call_id = $1
      ORDER BY c.started_at DESC LIMIT 1`,
    [s.callId, s.chatId, INSTANCE_LOST, DEAD_AFTER_MS],
  );
  if (rows[0]?.writer_alive) return null;
  const call = rows[0] ?? (await neverStored(db, s));
  if (!call || call.status === 'running') return null;
  const usage = call.total_tokens === null ? null : { inputTokens: call.input_tokens ?? 0, outputTokens: call.output_tokens ?? 0, totalTokens: call.total_tokens };
  const text = call.text ?? '';
  const end: ResponseEnd =
    call.status === 'succeeded'
      ? { status: 'completed', outputText: text, toolCalls: null, deltas: null, usage, error: null }
      : { status: 'failed', outputText: '', toolCalls: null, deltas: null, usage, error: call.error ?? 'instance lost' };
  await finishResponse(db, s.id, end);
  return getResponse(db, s.id, s.owner);
}

/**
 * A response whose LlmCall was never written, though its instance has stopped beating: that instance died
 * before its run stored anything. Null while the instance lives (its run may be about to write).
 */
async function neverStored(db: Queryable, s: StoredResponse): Promise<LostCall | null> {
  const { rows } = await db.query<{ dead: boolean }>(
    `SELECT NOT EXISTS (SELECT 1 FROM llm_calls WHERE id = r.call_id) AND NOT ${alive('r.instance_id', '$2')} AS dead
       FROM openai_responses r WHERE r.id = $1`,
    [s.id, DEAD_AFTER_MS],
  );
  if (!rows[0]?.dead) return null;
  return { status: 'failed', error: `${INSTANCE_LOST}: the instance stopped before the response's run stored anything`, input_tokens: null, output_tokens: null, total_tokens: null, text: null };
}

/** The caller's response whose run is LlmCall `callId` (a keyed request's retry finds the first one's by it). */
export async function responseOfCall(db: Queryable, callId: string, owner: string): Promise<StoredResponse | null> {
  const { rows } = await db.query<Row>(`SELECT r.*, ${queuedOf('r')} FROM openai_responses r WHERE r.call_id = $1 AND r.owner_id = $2`, [callId, owner]);
  return rows[0] ? toResponse(rows[0]) : null;
}

/**
 * At a start: the responses this instance was running when it last stopped have no run any more, but for
 * those a peer continued (a takeover), whose end that peer writes.
 */
export async function failInterruptedResponses(db: Queryable, instanceId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE openai_responses r SET status = 'failed', error = $2, completed_at = now()
      WHERE r.instance_id = $1 AND r.${GOING} AND NOT EXISTS (SELECT 1 FROM llm_calls c WHERE c.continues_call_id = r.call_id)`,
    [instanceId, `${INSTANCE_LOST}: the service instance stopped or restarted during the response`],
  );
  return rowCount ?? 0;
}
