// An LlmCall's row, and a chat's last run (its newest completion call) as the chat queries read it.
import type { ProviderName } from '../providers/types.ts';
import type { LastRun, RunStatus } from '../base/types.ts';
import { iso, isoOrNull } from './values.ts';

/** A row of llm_calls. */
export interface LlmCallRow {
  id: string;
  chat_id: string | null;
  provider: string;
  model: string;
  status: string;
  started_at: Date;
  finished_at: Date | null;
  latency_ms: number | null;
  input_tokens: number | null;
  output_tokens: number | null;
  total_tokens: number | null;
  error: string | null;
  message_id: string | null;
}

/** A chat's newest completion call as one JSON object (column `last_run`), null when it has none. */
export function lastRunSql(c: string): string {
  return `(SELECT json_build_object('id', l.id, 'provider', l.provider, 'model', l.model, 'status', l.status,
                                    'error', l.error, 'started_at', l.started_at, 'finished_at', l.finished_at,
                                    'latency_ms', l.latency_ms, 'input_tokens', l.input_tokens,
                                    'output_tokens', l.output_tokens, 'total_tokens', l.total_tokens,
                                    'fallback', (SELECT m.metadata->'fallback' FROM messages m WHERE m.id = l.message_id))
             FROM llm_calls l WHERE l.chat_id = ${c}.id AND l.purpose = 'completion'
            ORDER BY l.started_at DESC LIMIT 1) AS last_run`;
}

/** `last_run` as json_build_object gives it: timestamps in Postgres's text form. */
export type LastRunRow = Pick<LlmCallRow, 'id' | 'provider' | 'model' | 'status' | 'error' | 'latency_ms' | 'input_tokens' | 'output_tokens' | 'total_tokens'> & {
  started_at: string;
  finished_at: string | null;
  /** The answer's metadata.fallback: the run went on on another model (PROVIDER_FALLBACKS). */
  fallback?: LastRun['fallback'];
};

export function toLastRun(row: LastRunRow | null): LastRun | null {
  if (!row) return null;
  // Usage is stored whole or not at all (finishLlmCall*).
  const usage =
    row.total_tokens === null ? null : { inputTokens: row.input_tokens ?? 0, outputTokens: row.output_tokens ?? 0, totalTokens: row.total_tokens };
  return {
    callId: row.id,
    provider: row.provider as ProviderName,
    model: row.model,
    status: row.status as RunStatus,
    error: row.error,
    startedAt: iso(row.started_at),
    finishedAt: isoOrNull(row.finished_at),
    latencyMs: row.latency_ms,
    usage,
    fallback: row.fallback ?? null,
  };
}
