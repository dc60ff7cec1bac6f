// A run's outcome as the end of its stored response: of the run the response started (responses.ts), or of
// the continuation a peer ran after the instance that started it was lost (a takeover, src/service/takeover.ts),
// which that peer writes, with the cuts of its deltas, so that a resume after the end is as exact as it was
// while the continuation ran (response-events.ts).
import { resumedCuts, type ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { Queryable } from '../db/types.ts';
import type { ContinuedRun } from '../store/takeover.ts';
import type { ResponseEnd } from './response-events.ts';
import type { ResponseEnds } from './response-ends.ts';
import { finishContinuedResponse, type ResponseEnd as StoredEnd } from './store.ts';

/** The run's outcome as the response's end. */
export function endOfResult(result: RunResult<ChatRunValue>): ResponseEnd {
  if (!result.ok) return { status: 'failed', text: '', toolCalls: null, usage: null, error: result.message };
  const v = result.value;
  return { status: v.stopped ? 'cancelled' : 'completed', text: v.text, toolCalls: v.toolCalls ?? null, usage: v.usage, error: null };
}

/** The end to store: the lengths of the deltas the run streamed (ChatRunValue.deltas), or its text as one. */
export function storedEndOf(result: RunResult<ChatRunValue>): StoredEnd {
  const end = endOfResult(result);
  const deltas = result.ok ? (result.value.deltas ?? (end.text ? [end.text.length] : [])) : [];
  return { status: end.status, outputText: end.text, toolCalls: end.toolCalls, deltas, usage: end.usage, error: end.error };
}

/**
 * The end of the response whose run `run` continued, once the continuation ended (the takeover's outcome).
 * Its first deltas are the lost run's checkpointed text, as many of them cut as that run cut them as its
 * checkpoint kept (actors/chat-run.ts, resumedCuts): stored beside the cuts. A continuation of a run that did
 * not keep its cuts has none to store: a resume past its first delta is lost, as it was live.
 */
export async function recordContinuedResponse(pool: Queryable, ends: ResponseEnds, run: ContinuedRun, result: RunResult<ChatRunValue>): Promise<void> {
  const end = storedEndOf(result);
  const resumedDeltas = run.deltas === null ? null : resumedCuts({ text: run.text, runToken: run.runToken, deltas: run.deltas }).exact;
  const id = await finishContinuedResponse(pool, run.callId, run.deltas === null ? { ...end, deltas: null } : { ...end, resumedDeltas });
  if (id !== null) ends.written(id);
}
