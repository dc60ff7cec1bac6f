// A search's rows (summary and detail) and their spec shapes, with the columns that produce them.
import type { AnswerCitation, SearchDetail, SearchResultItem, SearchSummary } from '../base/types.ts';
import { iso, isoOrNull } from './values.ts';

export function searchSummaryColumns(s: string): string {
  return `${s}.id, ${s}.title, ${s}.query, ${s}.created_at, ${s}.updated_at`;
}

export function searchDetailColumns(s: string): string {
  return `${searchSummaryColumns(s)}, ${s}.request_id, ${s}.latency_ms, ${s}.error, ${s}.answer_text,
          ${s}.answer_request_id, ${s}.answer_citations, ${s}.answer_error, ${s}.results`;
}

export interface SearchSummaryRow {
  id: string;
  title: string | null;
  query: string | null;
  created_at: Date;
  updated_at: Date;
  starred_at: Date | null;
}

export interface SearchDetailRow extends SearchSummaryRow {
  request_id: string | null;
  latency_ms: number | null;
  error: string | null;
  answer_text: string | null;
  answer_request_id: string | null;
  answer_citations: AnswerCitation[] | null;
  answer_error: string | null;
  results: SearchResultItem[] | null;
}

export function toSearchSummary(row: SearchSummaryRow): SearchSummary {
  return {
    id: row.id,
    title: row.title,
    query: row.query,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    starred: row.starred_at !== null,
    starredAt: isoOrNull(row.starred_at),
  };
}

/** SearchDetail fields are plain strings and numbers: a search never run gets '' / 0 / [] defaults. */
export function toSearchDetail(row: SearchDetailRow): SearchDetail {
  return {
    ...toSearchSummary(row),
    title: row.title ?? row.query ?? '',
    query: row.query ?? '',
    requestId: row.request_id ?? '',
    latencyMs: row.latency_ms ?? 0,
    error: row.error,
    answerText: row.answer_text,
    answerRequestId: row.answer_request_id,
    answerCitations: row.answer_citations ?? [],
    answerError: row.answer_error,
    results: row.results ?? [],
  };
}
