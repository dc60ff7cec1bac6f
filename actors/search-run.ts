// The search run actor's work: engine_a's search and answer side by side (search runs always use
// engine_a, whatever CHAT_WEB_SEARCH_ENGINE says), one event per outcome as soon as it is known,
// then the run stored (replacing results and answer) and exactly one `done` or `error`.
import { engineAAnswer, engineASearch, type EngineAEndpoint } from '../src/engines/engine-a.ts';
import type { RunDeps } from '../src/run-deps.ts';
import { saveSearchRun } from '../src/store/searches.ts';
import type { AnswerCitation, SearchDetail, SearchResultItem } from '../src/types.ts';
import { SEARCH_NOT_FOUND, SEARCH_RUN_STOPPED } from '../src/messages.ts';
import { RunCancelled, type RunContext } from './runtime/actor.ts';

export interface SearchRunRequest {
  searchId: string;
  /** engine_a, as the route found it configured (search runs always use engine_a). */
  endpoint: EngineAEndpoint;
  /** The query to run: the run body's override, else the stored query (the route checks it is not blank). */
  query: string;
  /** The run body's title override; the stored title is kept when absent. */
  title?: string;
  type?: 'auto' | 'fast' | 'deep' | 'instant';
  numResults?: number;
  includeDomains?: string[];
  excludeDomains?: string[];
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

function clip(text: string | null, max: number): string | null {
  if (text === null) return null;
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

export async function searchRun(ctx: RunContext<SearchRunValue>, req: SearchRunRequest, deps: RunDeps): Promise<void> {
  const started = performance.now();
  const { signal } = ctx;
  const { endpoint } = req;

  const search: Promise<Outcome<{ requestId: string | null; results: SearchResultItem[] }>> = engineASearch(
    {
      ...endpoint,
      query: req.query,
      type: req.type,
      numResults: req.numResults,
      includeDomains: req.includeDomains,
      excludeDomains: req.excludeDomains,
      contents: { highlights: { maxCharacters: SNIPPET_CHARS }, summary: { query: req.query } },
    },
    { signal, timeoutMs: SEARCH_TIMEOUT_MS },
  ).then(
    (r) => {
      const value = { requestId: r.requestId, results: r.results };
      ctx.emitKeyed('search_results', 'search_results', value);
      return { ok: true as const, value };
    },
    (err: unknown) => {
      const error = messageOf(err);
      ctx.emitKeyed('search_error', 'search_error', { error });
      return { ok: false as const, error };
    },
  );

  const answer: Promise<Outcome<{ answerText: string | null; answerRequestId: string | null; answerCitations: AnswerCitation[] }>> =
    engineAAnswer({ ...endpoint, query: req.query }, { signal, timeoutMs: ANSWER_TIMEOUT_MS }).then(
      (r) => {
        const value = {
          answerText: r.answerText,
          answerRequestId: r.answerRequestId,
          answerCitations: r.citations.map((c) => ({ ...c, text: clip(c.text, CITATION_TEXT_CHARS) })),
        };
        ctx.emitKeyed('answer', 'answer', value);
        return { ok: true as const, value };
      },
      (err: unknown) => {
        const error = messageOf(err);
        ctx.emitKeyed('answer_error', 'answer_error', { error });
        return { ok: false as const, error };
      },
    );

  let [s, a] = await Promise.all([search, answer]);
  // A user's stop keeps what had arrived; the part cut short is stored as stopped.
  const stopped = signal.aborted && ctx.stopRequested;
  if (signal.aborted && !stopped) {
    // Only a cancel (server shutdown) or a stop aborts a run; a client disconnect never does. Nothing is stored.
    const reason: unknown = signal.reason;
    // A shutdown's or a fence's message already says "run cancelled": it is the error's, verbatim.
    const verbatim = reason instanceof RunCancelled && (reason.why === 'shutdown' || reason.why === 'fenced');
    const message = verbatim ? reason.message : `search run cancelled: ${messageOf(reason ?? 'aborted')}`;
    ctx.finish('error', { message }, { ok: false, outcome: 'cancelled', message });
    return;
  }
  if (stopped) {
    if (!s.ok) s = { ok: false, error: SEARCH_RUN_STOPPED };
    if (!a.ok) a = { ok: false, error: SEARCH_RUN_STOPPED };
  }
  const latencyMs = Math.round(performance.now() - started);

  let detail: SearchDetail | null;
  try {
    detail = await saveSearchRun(deps.pool, req.searchId, {
      query: req.query,
      title: req.title ?? null,
      requestId: s.ok ? s.value.requestId : null,
      latencyMs,
      error: s.ok ? null : s.error,
      results: s.ok ? s.value.results : [],
      answerText: a.ok ? a.value.answerText : null,
      answerRequestId: a.ok ? a.value.answerRequestId : null,
      answerCitations: a.ok ? a.value.answerCitations : [],
      answerError: a.ok ? null : a.error,
    });
  } catch (err) {
    const message = `search run could not be stored: ${messageOf(err)}`;
    ctx.finish('error', { message }, { ok: false, outcome: 'internal', message });
    return;
  }
  if (!detail) {
    // Deleted while the run was going.
    const message = SEARCH_NOT_FOUND;
    ctx.finish('error', { message }, { ok: false, outcome: 'not_found', message });
    return;
  }
  if (stopped) {
    ctx.finish('error', { message: SEARCH_RUN_STOPPED }, { ok: false, outcome: 'stopped', message: SEARCH_RUN_STOPPED });
    return;
  }
  if (!s.ok && !a.ok) {
    const message = `search and answer both failed: ${s.error}; ${a.error}`;
    ctx.finish('error', { message }, { ok: false, outcome: 'provider_error', message });
    return;
  }
  const value: SearchRunValue = { search: detail };
  ctx.finish('done', { search: detail }, { ok: true, value });
}
