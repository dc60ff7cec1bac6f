// Idempotency-Key on POST /openai/v1/responses, as on the spec's completions
// (docs/api-notes.md, "Retrying a start safely"): the first request claims the key and starts the response; a retry with the same key and
// body starts nothing and answers the first one's response as the request asks for it (its events, the
// object at once in the background, or the object once it ended). The key's record finds the response by its
// LlmCall; its outcome, recorded when the run ends, is what a waiting retry wakes up on.
import type { ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { AppContext } from '../service/context.ts';
import { REPLAYED_HEADERS } from '../http/idempotency.ts';
import type { Reply } from '../http/reply.ts';
import { claimKey, nextRecord, recordOutcome, releaseKey, type KeyedRequest } from '../service/idempotent-start.ts';
import { keyedRequest } from '../routes/idempotent-replay.ts';
import type { IdempotencyRecord } from '../store/idempotency.ts';
import { storedObject } from './response-events.ts';
import type { ResponseEnds } from './response-ends.ts';
import { currentResponse, streamResponse } from './response-reads.ts';
import type { CreateResponseBody } from './responses-request.ts';
import { isGoing, responseOfCall } from './store.ts';

export type Claimed = { start: true; keyed: KeyedRequest | null } | { start: false };

/** Claims `key` for this request (null: unkeyed); a retry is answered here, and `start` is false then. */
export async function claimResponseKey(app: AppContext, ends: ResponseEnds, key: string | null, fingerprint: string, body: CreateResponseBody, callId: string, owner: string, reply: Reply): Promise<Claimed> {
  if (!key) return { start: true, keyed: null };
  const keyed = keyedRequest(key, body.stream ? 'stream' : 'whole', 'POST /openai/v1/responses', fingerprint, { chatId: null, callId, owner });
  const claim = await claimKey(app, keyed);
  if (claim.start) return { start: true, keyed };
  await replay(app, ends, claim.record, body, reply, owner);
  return { start: false };
}

/** Runs `start` with the key claimed: a failure before the run started frees the key for the next try. */
export async function withKey<T>(app: AppContext, keyed: KeyedRequest | null, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    if (keyed) await releaseKey(app, keyed);
    throw err;
  }
}

/** The run's end on its key: what wakes retries waiting for it. */
export function recordResponseKey(app: AppContext, keyed: KeyedRequest | null, responseId: string, result: Promise<RunResult<ChatRunValue>>): void {
  if (keyed) recordOutcome(app, keyed, result, () => ({ status: 200, body: { response: responseId } }));
}

async function replay(app: AppContext, ends: ResponseEnds, record: IdempotencyRecord, body: CreateResponseBody, reply: Reply, owner: string): Promise<void> {
  const gone = new AbortController();
  reply.onAbort(() => gone.abort());
  // The first request writes its response beside its run's start: until then, and for a whole answer until
  // its end, wait for the key's next change.
  for (;;) {
    const found = record.callId ? await responseOfCall(app.pool, record.callId, owner) : null;
    if (found) {
      const stored = await currentResponse(app, ends, found.id, owner);
      if (body.stream) {
        reply.shared = [...(reply.shared ?? []), 'idempotent-replayed', 'true'];
        return streamResponse(app, ends, stored, -1, reply, owner);
      }
      if (body.background || !isGoing(stored)) return reply.json(200, storedObject(stored), REPLAYED_HEADERS);
    }
    const next = await nextRecord(app, { key: record.key, owner }, gone.signal);
    if (!next) return;
    record = next;
  }
}
