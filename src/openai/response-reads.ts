// Reading a stored response again: as it stands (its end read from its LlmCall when its instance died
// before writing it), or as its events after a sequence number, replayed then live while its run goes
// (on any instance: the run is its chat's), from what was stored after.
import { setTimeout as sleep } from 'node:timers/promises';
import type { AppContext } from '../service/context.ts';
import type { Reply } from '../http/reply.ts';
import { RESPONSE_NOT_FOUND, RESPONSE_UNAVAILABLE } from './errors.ts';
import { baseOfStored, ResponseEventStream } from './response-events.ts';
import { getResponse, settleLost, type StoredResponse } from './store.ts';

/** The caller's response (404 when it is none of theirs). */
export async function currentResponse(app: AppContext, id: string, owner: string): Promise<StoredResponse> {
  const stored = await getResponse(app.pool, id, owner);
  if (!stored) throw RESPONSE_NOT_FOUND(id);
  if (stored.status !== 'in_progress' || (await app.runs.find('chat', stored.chatId)) !== null) return stored;
  // No run (anywhere): it ended a moment ago and its instance is writing its end, or that instance died.
  for (let waited = 0; ; waited += END_POLL_MS) {
    const again = await getResponse(app.pool, id, owner);
    if (!again || again.status !== 'in_progress') return again ?? stored;
    const lost = await settleLost(app.pool, again);
    if (lost || waited >= END_WAIT_MS) return lost ?? again;
    await sleep(END_POLL_MS);
  }
}

/** How long a read waits for the end of a run that has just ended to be written, and how often it looks. */
const END_WAIT_MS = 5000;
const END_POLL_MS = 50;

/** The response's events numbered after `startingAfter` (-1: all) on an SSE answer. */
export async function streamResponse(app: AppContext, stored: StoredResponse, startingAfter: number, reply: Reply, owner: string): Promise<void> {
  const sink = app.sse.create(reply);
  const events = new ResponseEventStream(sink, baseOfStored(stored), startingAfter, stored.callId);
  if (stored.status === 'in_progress' && (await app.runs.attach('chat', stored.chatId, events)) !== 'not_found') return sink.open();
  // Ended (maybe a moment ago): from what was stored.
  const now = stored.status === 'in_progress' ? await currentResponse(app, stored.id, owner) : stored;
  if (now.status === 'in_progress') throw RESPONSE_UNAVAILABLE(stored.id);
  events.replayStored(now);
}
