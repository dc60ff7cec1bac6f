// The query string of a history search (GET /v1/workspace-items?q=…&limit=…), checked before the store
// sees it. Without q the route is the plain workspace listing, and limit is not read.
import { badRequest } from '../http/errors.ts';
import { textProblem } from '../base/text.ts';

export const HISTORY_Q_MAX = 200;
export const HISTORY_LIMIT_MAX = 200;
export const HISTORY_LIMIT_DEFAULT = 50;

export interface HistoryQuery {
  q: string;
  limit: number;
}

/** The search asked for, null when there is no `q`; throws a 400 HttpError saying what is wrong. */
export function historyQuery(params: URLSearchParams): HistoryQuery | null {
  const raw = params.get('q');
  if (raw === null) return null;
  const q = raw.trim();
  // Characters are code points: an emoji is one, as a person counts it.
  const length = [...q].length;
  if (length < 1 || length > HISTORY_Q_MAX) {
    throw badRequest(`q must be 1–${HISTORY_Q_MAX} characters after trimming (got ${length})`);
  }
  const problem = textProblem(q);
  if (problem) throw badRequest(`q ${problem}`);
  return { q, limit: historyLimit(params.get('limit')) };
}

function historyLimit(raw: string | null): number {
  if (raw === null) return HISTORY_LIMIT_DEFAULT;
  const limit = /^\d{1,4}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(limit >= 1 && limit <= HISTORY_LIMIT_MAX)) {
    throw badRequest(`limit must be a whole number from 1 to ${HISTORY_LIMIT_MAX}`);
  }
  return limit;
}
