// The search run actor: engine_a's search and answer side by side (search runs always use engine_a,
// whatever CHAT_WEB_SEARCH_ENGINE says), one event per outcome as soon as it is known, then the run
// stored (replacing results and answer) and exactly one `done` or `error`.
//
//   idle ─start─▶ running ─search_done, answer_done (both)─▶ storing ─saved─▶ ended
//                       (a disconnect ends it here, storing nothing)
import { engineAAnswer, engineASearch, type EngineAEndpoint } from '../src/engines/engine-a.ts';
import { markSearchRunning, recordSearchRunFailure, saveSearchRun, SearchRunFencedError, type SearchRunMark } from '../src/store/searches.ts';
import type { AnswerCitation, SearchDetail, SearchResultItem } from '../src/base/types.ts';
import type { RunDeps as Deps } from '../src/domain/run-deps.ts';
import { SEARCH_NOT_FOUND, SEARCH_RUN_STOPPED } from '../src/base/messages.ts';
import { defineRun, type Cancellation, type Control, type Io } from './runtime/actor.ts';
import { sseFrame } from './runtime/frame.ts';
import type { RunFailure } from './runtime/protocol.ts';
import { interruptionOf } from './run-failure.ts';
import { sliceUnits } from '../src/base/text.ts';
import { endEngineSpan, engineSpan } from '../src/telemetry/actor-spans.ts';

export interface SearchRunRequest {
  searchId: string;
  /** The user whose search it is. */
  owner: string;
  /** engine_a, as the route found it configured (search runs always use engine_a). */
  endpoint: EngineAEndpoint;
  /** The query to run: the run body's override, else the stored query (blank only in a request that may only join). */
  query: string;
  /** The run body's title override; the stored title is kept when absent. */
  title?: string;
  type?: 'auto' | 'fast' | 'deep' | 'instant';
  numResults?: number;
  includeDomains?: string[];
  excludeDomains?: string[];
  /** The W3C traceparent of the run's span (tracing on: src/telemetry/run-spans.ts sets it). */
  traceparent?: string;
}

export interface SearchRunValue {
  search: SearchDetail;
}

/** A hung engine must not hold a run (and its searchId) forever. Answers are generated, so slower. */
export const SEARCH_TIMEOUT_MS = 60_000;
export const ANSWER_TIMEOUT_MS = 120_000;
/** Per-result content asked of the engine: highlights become the snippet, plus a query-focused summary. */
const SNIPPET_CHARS = 500;
/** The answer call returns each cited page's text; we keep an excerpt (docs/api-notes.md). */
export const CITATION_TEXT_CHARS = 1000;

type Outcome<T> = { ok: true; value: T } | { ok: false; error: string };

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** At most `max` units and `…`, never cut inside a surrogate pair (the half left would be stored as U+FFFD). */
function clip(text: string | null, max: number): string | null {
  if (text === null) return null;
  return text.length > max ? `${sliceUnits(text, max)}…` : text;
}

type Found = { requestId: string | null; results: SearchResultItem[] };
type Answered = { answerText: string | null; answerRequestId: string | null; answerCitations: AnswerCitation[] };

export type SearchMsg =
  /** `mark`: the run's mark on its search, null (or absent) when it could not be taken. */
  | { t: 'search_done'; outcome: Outcome<Found>; mark?: SearchRunMark | null }
  | { t: 'answer_done'; outcome: Outcome<Answered> }
  | { t: 'saved'; detail: SearchDetail | null }
  | { t: 'save_failed'; error: unknown };

export type SearchCommand =
  | { c: 'search'; req: SearchRunRequest }
  | { c: 'answer'; req: SearchRunRequest }
  | { c: 'save'; searchId: string; owner: string; row: Parameters<typeof saveSearchRun>[2]; mark: SearchRunMark | null };

export type SearchState =
  | { readonly s: 'idle'; readonly req: SearchRunRequest }
  /** `started` on the runtime's clock; each engine's outcome once it is in. */
  | {
      readonly s: 'running';
      readonly req: SearchRunRequest;
      readonly started: number;
      readonly search: Outcome<Found> | null;
      readonly answer: Outcome<Answered> | null;
      /** The run's mark on its search (with the search's outcome), which fences its save. */
      readonly mark: SearchRunMark | null;
    }
  /** `stopped`: a user's stop; `interrupted`: a shutdown or fencing cut, which ends with its message. */
  | { readonly s: 'storing'; readonly search: Outcome<Found>; readonly answer: Outcome<Answered>; readonly stopped: boolean; readonly interrupted: RunFailure | null }
  | { readonly s: 'ended' };

type Running = SearchState & { s: 'running' };

type SearchIo = Io<SearchMsg, SearchRunValue, SearchCommand, Deps>;

async function executeSearch(cmd: SearchCommand, deps: Deps, _tell: unknown, run: Cancellation): Promise<SearchMsg> {
  switch (cmd.c) {
    case 'search': {
      const { req } = cmd;
      const contents = { highlights: { maxCharacters: SNIPPET_CHARS }, summary: { query: req.query } };
      const search = { ...req.endpoint, query: req.query, type: req.type, numResults: req.numResults, includeDomains: req.includeDomains, excludeDomains: req.excludeDomains, contents };
      // The row names this instance while the engines work, so a crash leaves the run failed, not unknown.
      // The outcome waits for that write (the save that clears it must follow it, fenced by it); a failed
      // mark means a crash would not be seen, and the save goes through only while no run holds a mark.
      const marked = markSearchRunning(deps.pool, req.searchId, deps.config.instanceId).catch(() => null);
      const span = engineSpan(req.traceparent, 'search');
      const found = engineASearch(search, { signal: run.signal, timeoutMs: SEARCH_TIMEOUT_MS }).then(
        (r): Outcome<Found> => {
          endEngineSpan(span, null);
          return { ok: true, value: { requestId: r.requestId, results: r.results } };
        },
        (err: unknown): Outcome<Found> => {
          const error = messageOf(err);
          endEngineSpan(span, error);
          return { ok: false, error };
        },
      );
      return Promise.all([found, marked]).then(([outcome, mark]): SearchMsg => ({ t: 'search_done', outcome, mark }));
    }
    case 'answer': {
      const span = engineSpan(cmd.req.traceparent, 'answer');
      return engineAAnswer({ ...cmd.req.endpoint, query: cmd.req.query }, { signal: run.signal, timeoutMs: ANSWER_TIMEOUT_MS }).then(
        (r): SearchMsg => {
          endEngineSpan(span, null);
          const answerCitations = r.citations.map((c) => ({ ...c, text: clip(c.text, CITATION_TEXT_CHARS) }));
          return { t: 'answer_done', outcome: { ok: true, value: { answerText: r.answerText, answerRequestId: r.answerRequestId, answerCitations } } };
        },
        (err: unknown): SearchMsg => {
          const error = messageOf(err);
          endEngineSpan(span, error);
          return { t: 'answer_done', outcome: { ok: false, error } };
        },
      );
    }
    case 'save':
      return saveSearchRun(deps.pool, cmd.searchId, cmd.row, cmd.owner, cmd.mark).then(
        (detail): SearchMsg => ({ t: 'saved', detail }),
        (error: unknown): SearchMsg => {
          releaseMark(cmd, error, deps);
          return { t: 'save_failed', error };
        },
      );
  }
}

/** The failure message of a run whose save failed (its `error` event, and the search's stored error). */
const notStored = (err: unknown) => `search run could not be stored: ${messageOf(err)}`;

/**
 * A save that failed leaves the run's mark, and the run ends: the mark is cleared (the failure recorded)
 * now, or once the database takes writes again (the retry queue), else a later loss of this instance
 * would stamp `instance lost` on a run that ended long before. The run's `error` does not wait for it.
 * A refused (fenced) save has no mark to clear.
 */
function releaseMark(cmd: SearchCommand & { c: 'save' }, err: unknown, deps: Deps): void {
  const { mark } = cmd;
  if (!mark || err instanceof SearchRunFencedError) return;
  void deps.writes.write(`the failure of the run of search ${cmd.searchId}`, () => recordSearchRunFailure(deps.pool, cmd.searchId, mark, notStored(err))).catch(() => undefined);
}

const initial = (req: SearchRunRequest): SearchState => ({ s: 'idle', req });

function fail(io: SearchIo, message: string, outcome: RunFailure['outcome']): SearchState {
  io.fail({ ok: false, outcome, message });
  return { s: 'ended' };
}

/** A user's stop, or a shutdown or fencing cut (its failure), that has aborted the run; neither for a disconnect or no abort. */
function cutOf(io: SearchIo): { stopped: boolean; interrupted: RunFailure | null } {
  return { stopped: io.signal.aborted && io.cancelled === 'stop', interrupted: interruptionOf(io.signal) };
}

/** One engine's outcome is in; the run goes on to storing once both are. */
function settleIfBoth(state: Running, io: SearchIo): SearchState {
  const { search, answer } = state;
  return search && answer ? settle(state, search, answer, io) : state;
}

/** Both outcomes are in: store them, or (a disconnect) end storing nothing. */
function settle({ req, started, mark }: Running, s: Outcome<Found>, a: Outcome<Answered>, io: SearchIo): SearchState {
  const { signal } = io;
  // A user's stop keeps what had arrived, the part cut short as stopped (cutShort). So does a
  // shutdown or fencing cut, which then ends with its own message.
  const { stopped, interrupted } = cutOf(io);
  if (signal.aborted && !stopped && !interrupted) {
    // Only a cancel or a stop aborts a run; a client disconnect never does. Nothing is stored.
    return fail(io, `search run cancelled: ${messageOf(signal.reason ?? 'aborted')}`, 'cancelled');
  }
  const row = {
    query: req.query,
    title: req.title ?? null,
    requestId: s.ok ? s.value.requestId : null,
    latencyMs: Math.round(io.now() - started),
    error: s.ok ? null : s.error,
    results: s.ok ? s.value.results : [],
    answerText: a.ok ? a.value.answerText : null,
    answerRequestId: a.ok ? a.value.answerRequestId : null,
    answerCitations: a.ok ? a.value.answerCitations : [],
    answerError: a.ok ? null : a.error,
  };
  io.perform({ c: 'save', searchId: req.searchId, owner: req.owner, row, mark });
  return { s: 'storing', search: s, answer: a, stopped, interrupted };
}

function saved(state: SearchState & { s: 'storing' }, detail: SearchDetail | null, io: SearchIo): SearchState {
  // A cut (shutdown, fencing, the search's deletion) ends with its own message, stored or not.
  if (state.interrupted) return fail(io, state.interrupted.message, 'cancelled');
  // Deleted while the run was going.
  if (!detail) return fail(io, SEARCH_NOT_FOUND, 'not_found');
  if (state.stopped) return fail(io, SEARCH_RUN_STOPPED, 'stopped');
  const { search: s, answer: a } = state;
  if (!s.ok && !a.ok) return fail(io, `search and answer both failed: ${s.error}; ${a.error}`, 'provider_error');
  io.done({ search: detail }, { search: detail });
  return { s: 'ended' };
}

/**
 * An engine's failure that comes in after a stop, a shutdown or a fencing cut is the part cut short: it
 * reads `search run stopped`, in its event and in storage alike, whatever the aborted call said. A
 * failure that came in before keeps its own words.
 */
function cutShort<T>(io: SearchIo, outcome: Outcome<T>): Outcome<T> {
  const { stopped, interrupted } = cutOf(io);
  return !outcome.ok && (stopped || interrupted) ? { ok: false, error: SEARCH_RUN_STOPPED } : outcome;
}

/** Sends one engine's outcome as its event, keyed by the event's name (a replay holds it once); returns what it sent. */
function emitOutcome<T>(io: SearchIo, received: Outcome<T>, okEvent: string, errorEvent: string): Outcome<T> {
  const outcome = cutShort(io, received);
  if (outcome.ok) io.emitKeyed(okEvent, okEvent, outcome.value);
  else io.emitKeyed(errorEvent, errorEvent, { error: outcome.error });
  return outcome;
}

function saveFailed(err: unknown, io: SearchIo): SearchState {
  // A run back from a pause, whose outcome recovery (or a newer run) has decided meanwhile: its own ends.
  if (err instanceof SearchRunFencedError) {
    io.log('warn', `run ${io.runId}: ${err.message}`);
    return fail(io, err.message, 'cancelled');
  }
  return fail(io, notStored(err), 'internal');
}

function receive(state: SearchState, msg: SearchMsg | Control, io: SearchIo): SearchState {
  switch (msg.t) {
    case 'start': {
      if (state.s !== 'idle') return io.unhandled(state, msg);
      const { req } = state;
      const started = io.now();
      io.perform({ c: 'search', req });
      io.perform({ c: 'answer', req });
      return { s: 'running', req, started, search: null, answer: null, mark: null };
    }
    case 'stop':
    case 'cancel':
      // The engines' calls see the aborted signal and come back as outcomes.
      return state;
    case 'search_done':
      if (state.s !== 'running' || state.search) return io.unhandled(state, msg);
      return settleIfBoth({ ...state, search: emitOutcome(io, msg.outcome, 'search_results', 'search_error'), mark: msg.mark ?? null }, io);
    case 'answer_done':
      if (state.s !== 'running' || state.answer) return io.unhandled(state, msg);
      return settleIfBoth({ ...state, answer: emitOutcome(io, msg.outcome, 'answer', 'answer_error') }, io);
    case 'saved':
      return state.s === 'storing' ? saved(state, msg.detail, io) : io.unhandled(state, msg);
    case 'save_failed':
      return state.s === 'storing' ? saveFailed(msg.error, io) : io.unhandled(state, msg);
  }
}

/** Nothing to record beyond the run's end: the runtime ends it with the error. */
function crashed(_state: SearchState, err: unknown): SearchState {
  throw err;
}

/** The spec's terminal `error` event of a search stream. */
const errorFrame = (message: string): string => sseFrame('error', { message });

/** The kind's behavior, for tests that drive it without I/O. */
export const searchBehavior = { initial, receive, crashed, execute: executeSearch, errorFrame };
export const searchRun = defineRun(searchBehavior);
