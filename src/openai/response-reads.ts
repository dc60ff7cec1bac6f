// Reading a stored response again: as it stands (its end read from its LlmCall when its instance died
// before writing it), or as its events after a sequence number, replayed then live while its run goes
// (on any instance: the run is its chat's), from what was stored after.
import type { AppContext } from '../service/context.ts';
import type { Reply } from '../http/reply.ts';
import { RESPONSE_NOT_FOUND, RESPONSE_UNAVAILABLE } from './errors.ts';
import type { ResponseEnds } from './response-ends.ts';
import { baseOfStored, ResponseEventStream } from './response-events.ts';
import { getResponse, isGoing, settleLost, type StoredResponse } from './store.ts';

/** The caller's response (404 when it is none of theirs). */
export async function currentResponse(app: AppContext, ends: ResponseEnds, id: string, owner: string): Promise<StoredResponse> {
  const stored = await getResponse(app.pool, id, owner);
  if (!stored) throw RESPONSE_NOT_FOUND(id);
  if (!isGoing(stored) || (await app.runs.find('chat', stored.chatId)) !== null) return stored;
  // No run (anywhere): it ended a moment ago and the instance that ran it is writing its end (announced to
  // `ends` once written), or that instance died (then its end is read from its LlmCall).
  const end = ends.wait(id, END_WAIT_MS);
  try {
    const now = await settled(app, id, owner);
    if (!isGoing(now) || !(await end.heard)) return now;
    return await settled(app, id, owner);
  } finally {
    end.stop();
  }
}

/** The response as it stands, its end read from its LlmCall when its instance died before writing it. */
async function settled(app: AppContext, id: string, owner: string): Promise<StoredResponse> {
  const now = await getResponse(app.pool, id, owner);
  if (!now) throw RESPONSE_NOT_FOUND(id);
  if (!isGoing(now)) return now;
  return (await settleLost(app.pool, now)) ?? now;
}

/**
 * How long a read waits for the end of a run that has just ended to be written: past it (the instance that
 * ran it died after its run ended, before writing), the response reads as it stands, still in progress.
 */
const END_WAIT_MS = 5000;

/** The response's events numbered after `startingAfter` (-1: all) on an SSE answer. */
export async function streamResponse(app: AppContext, ends: ResponseEnds, stored: StoredResponse, startingAfter: number, reply: Reply, owner: string): Promise<void> {
  const sink = app.sse.create(reply);
  const events = new ResponseEventStream(sink, baseOfStored(stored), startingAfter, stored.callId);
  if (isGoing(stored) && (await app.runs.attach('chat', stored.chatId, events)) !== 'not_found') return sink.open();
  // Ended (maybe a moment ago): from what was stored.
  const now = isGoing(stored) ? await currentResponse(app, ends, stored.id, owner) : stored;
  if (isGoing(now)) throw RESPONSE_UNAVAILABLE(stored.id);
  events.replayStored(now);
}
