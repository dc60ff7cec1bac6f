// Searches: a query, its ranked results and generated answer. A run replaces results and answer.
import { randomUUID } from 'node:crypto';
import { prepared } from '../db/prepared.ts';
import type { Queryable } from '../db/types.ts';
import type { TransactionDb } from './recovery.ts';
import type { AnswerCitation, SearchDetail, SearchResultItem, SearchSummary } from '../base/types.ts';
import { searchDetailColumns, searchSummaryColumns, toSearchDetail, toSearchSummary, type SearchDetailRow, type SearchSummaryRow } from './search-rows.ts';
import { starJoin } from './stars-sql.ts';
import { cleanText, isIssuedId, toJson, trimToNull } from './values.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

/** One run's outcome, stored over the previous one. `requestId` is null when the search call failed. */
export type SearchRun = Pick<
  SearchDetail,
  'latencyMs' | 'error' | 'answerText' | 'answerRequestId' | 'answerCitations' | 'answerError' | 'results'
> & {
  query: string;
  /** Replaces the title when given; otherwise an untitled search takes the query as its title. */
  title?: string | null;
  requestId: string | null;
};

export interface ReusableSearch {
  search: SearchSummary;
  /** Results or answer text are stored (part of the spec's cacheHit condition). */
  hasStoredResults: boolean;
}

/** The spec's normalization for reuseByQuery: trim and lowercase. */
export function normalizeQuery(query: string): string {
  return query.trim().toLowerCase();
}

export function hasStoredResults(detail: Pick<SearchDetail, 'results' | 'answerText'>): boolean {
  return detail.results.length > 0 || Boolean(detail.answerText);
}

const SUMMARY = `SELECT ${searchSummaryColumns('s')}, star.created_at AS starred_at`;
const DETAIL = `SELECT ${searchDetailColumns('s')}, star.created_at AS starred_at`;

export async function createSearch(
  db: Queryable,
  input: { title?: string | null; query?: string | null; owner: string },
): Promise<SearchSummary> {
  const query = trimToNull(input.query);
  const { rows } = await db.query<SearchSummaryRow>(
    `INSERT INTO searches (id, title, query, normalized_query, owner_id) VALUES ($1, $2, $3, $4, $5)
     RETURNING ${searchSummaryColumns('searches')}, NULL::timestamptz AS starred_at`,
    [randomUUID(), trimToNull(input.title), query, query === null ? null : normalizeQuery(query), input.owner],
  );
  return toSearchSummary(rows[0]!);
}

/** The search when it exists and belongs to `owner` (another user's search reads as absent). */
export async function getSearch(db: Queryable, id: string, owner: string): Promise<SearchSummary | null> {
  if (!isIssuedId(id)) return null;
  const { rows } = await db.query<SearchSummaryRow>(
    `${SUMMARY} FROM searches s ${starJoin('search', 's')} WHERE s.id = $1 AND s.owner_id = $2`,
    [id, owner],
  );
  return rows[0] ? toSearchSummary(rows[0]) : null;
}

/** The search with its stored run; a search never run gets the spec's string defaults ('' and 0). */
export async function getSearchDetail(db: Queryable, id: string, owner: string): Promise<SearchDetail | null> {
  if (!isIssuedId(id)) return null;
  const { rows } = await db.query<SearchDetailRow>(`${DETAIL} FROM searches s ${starJoin('search', 's')} WHERE s.id = $1 AND s.owner_id = $2`, [
    id,
    owner,
  ]);
  return rows[0] ? toSearchDetail(rows[0]) : null;
}

/** Newest updatedAt first. No limit unless given. */
export async function listSearches(db: Queryable, opts: { limit?: number; owner: string }): Promise<SearchSummary[]> {
  const { rows } = await db.query<SearchSummaryRow>(
    `${SUMMARY} FROM searches s ${starJoin('search', 's')}
      WHERE s.owner_id = $2
      ORDER BY s.updated_at DESC, s.id DESC
      LIMIT $1`,
    [opts.limit ?? null, opts.owner],
  );
  return rows.map(toSearchSummary);
}

/** Deletes the search and its project memberships. False when unknown. */
export async function deleteSearch(db: Queryable, id: string, owner: string): Promise<boolean> {
  if (!isIssuedId(id)) return false;
  const { rows } = await db.query<{ n: number }>(
    `WITH d AS (DELETE FROM searches WHERE id = $1 AND owner_id = $2 RETURNING id),
          m AS (DELETE FROM project_members WHERE item_type = 'search' AND item_id IN (SELECT id FROM d))
     SELECT count(*)::int AS n FROM d`,
    [id, owner],
  );
  return rows[0]!.n > 0;
}

/**
 * The most recently updated search whose query normalizes to the same text (`query` is normalized
 * here, so raw input is fine), without loading its results. Null when none.
 */
export async function findLatestByNormalizedQuery(db: Queryable, query: string, owner: string): Promise<ReusableSearch | null> {
  const normalized = normalizeQuery(query);
  if (!normalized) return null;
  const { rows } = await db.query<SearchSummaryRow & { has_results: boolean }>(
    `${SUMMARY},
            (jsonb_array_length(s.results) > 0 OR COALESCE(s.answer_text, '') <> '') AS has_results
       FROM searches s ${starJoin('search', 's')}
      WHERE s.owner_id = $2 AND md5(s.normalized_query) = md5($1) AND s.normalized_query = $1
      ORDER BY s.updated_at DESC, s.id DESC
      LIMIT 1`,
    [normalized, owner],
  );
  const row = rows[0];
  return row ? { search: toSearchSummary(row), hasStoredResults: row.has_results } : null;
}

/**
 * `reuseByQuery`: the owner's latest search with this query, or a new one, decided under a lock on the
 * (owner, normalized query) pair for one transaction, so requests at once (a double submit, two tabs,
 * two instances) get one search, not one each. The lock is taken before the search is looked for:
 * the look then sees a search another holder of the lock committed (READ COMMITTED reads anew per statement).
 */
export async function reuseOrCreateSearch(
  db: TransactionDb,
  input: { title?: string | null; query: string; owner: string },
): Promise<ReusableSearch & { reused: boolean }> {
  const { owner } = input;
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`search-reuse:${owner}:${normalizeQuery(input.query)}`]);
    const found = await findLatestByNormalizedQuery(client, input.query, owner);
    const out = found ? { ...found, reused: true } : { search: await createSearch(client, { ...input, owner }), hasStoredResults: false, reused: false };
    await client.query('COMMIT');
    return out;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/**
 * The mark a search run leaves on its search while it runs: which instance, since when. Recovery finds a
 * lost run by it, and a run's save is fenced by it. `startedAt` is the database's timestamp as text, so
 * it compares equal to the stored one to the microsecond.
 */
export interface SearchRunMark {
  instanceId: string;
  startedAt: string;
}

/** The save of a run that no longer holds its search's mark: recovered as lost, or a newer run has marked it since. */
export class SearchRunFencedError extends ServiceError {
  constructor(readonly searchId: string) {
    super(ErrorCodes.FENCED_WRITE, `write refused: search ${searchId} is no longer marked as this run's (recovered as lost, or a newer run took it)`);
    this.name = 'SearchRunFencedError';
  }
}

/**
 * Records that `instanceId` runs the search now (sql/011_checkpoints.sql): if the instance dies before
 * saveSearchRun clears it, recovery (recovery.ts) fails the run with the "instance lost" error. The mark
 * is handed back for the run's save (null when the search is unknown).
 */
export async function markSearchRunning(db: Queryable, id: string, instanceId: string): Promise<SearchRunMark | null> {
  if (!isIssuedId(id)) return null;
  const { rows } = await db.query<{ started_at: string }>(
    prepared(db, 'UPDATE searches SET run_instance_id = $2, run_started_at = now() WHERE id = $1 RETURNING run_started_at::text AS started_at'),
    [id, instanceId],
  );
  return rows[0] ? { instanceId, startedAt: rows[0].started_at } : null;
}

/**
 * A run that ended without its save (the database failed it): its mark goes, so that recovery never
 * takes the ended run for a lost one, and `error` says why the run stored nothing; the previous run's
 * results and answer stay. Only while the search holds the run's mark, so writing it twice (a retry
 * after a lost reply) or after a newer run has marked the search changes nothing.
 */
export async function recordSearchRunFailure(db: Queryable, id: string, mark: SearchRunMark, error: string): Promise<void> {
  await db.query(
    `UPDATE searches SET error = $4, last_run_at = now(), run_instance_id = NULL, run_started_at = NULL
      WHERE id = $1 AND run_instance_id = $2 AND run_started_at = $3::timestamptz`,
    [id, mark.instanceId, mark.startedAt, cleanText(error)],
  );
}

/**
 * Stores a run, replacing the previous results and answer, and bumps updatedAt. Null when unknown.
 * `mark` fences the save: a run's own mark saves only while the search still holds it, so a run that was
 * paused, recovered as lost, and wakes after a newer run marked the search, overwrites nothing (nor
 * clears the newer run's mark); null (the run could not mark) saves only while no run holds a mark.
 * Refused: SearchRunFencedError. Omitted: unfenced (a store outside a run).
 */
export async function saveSearchRun(db: Queryable, id: string, run: SearchRun, owner: string, mark?: SearchRunMark | null): Promise<SearchDetail | null> {
  if (!isIssuedId(id)) return null;
  const query = cleanText(run.query.trim());
  const { rows } = await db.query<SearchDetailRow>(
    `WITH s AS (
       UPDATE searches
          SET query = $2, normalized_query = $3, title = COALESCE($4, title, NULLIF($2, '')),
              request_id = $5, latency_ms = $6::int, error = $7, answer_text = $8, answer_request_id = $9,
              answer_citations = $10::jsonb, answer_error = $11, results = $12::jsonb,
              last_run_at = now(), updated_at = now(), run_instance_id = NULL, run_started_at = NULL
        WHERE id = $1 AND owner_id = $13
          AND ($14::boolean OR (run_instance_id IS NOT DISTINCT FROM $15::text AND run_started_at IS NOT DISTINCT FROM $16::timestamptz))
        RETURNING *
     )
     ${DETAIL} FROM s ${starJoin('search', 's')}`,
    [
      id,
      query,
      normalizeQuery(query),
      trimToNull(run.title),
      cleanText(run.requestId),
      Math.round(run.latencyMs),
      cleanText(run.error),
      cleanText(run.answerText),
      cleanText(run.answerRequestId),
      toJson(run.answerCitations ?? []),
      cleanText(run.answerError),
      toJson(run.results ?? []),
      owner,
      mark === undefined,
      mark?.instanceId ?? null,
      mark?.startedAt ?? null,
    ],
  );
  if (rows[0]) return toSearchDetail(rows[0]);
  if (mark !== undefined && (await db.query('SELECT 1 FROM searches WHERE id = $1 AND owner_id = $2', [id, owner])).rows.length > 0) {
    throw new SearchRunFencedError(id);
  }
  return null;
}
