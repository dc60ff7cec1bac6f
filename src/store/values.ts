// How values cross into and out of Postgres: timestamps out as ISO strings, text and JSON in without
// what Postgres cannot store, ids checked before they reach a query.
import { storableText, textProblem } from '../base/text.ts'; // and String#isWellFormed/toWellFormed types

/** Timestamps leave as ISO 8601 UTC with milliseconds. Strings come from json_agg (PG's own format). */
export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

export function isoOrNull(value: Date | string | null): string | null {
  return value === null ? null : iso(value);
}

// Postgres text and jsonb cannot hold U+0000, and jsonb refuses a lone surrogate; fetched pages, tool
// output and model text sometimes carry them (client input never does: src/http/json-check.ts refuses
// it). Dropping NUL and replacing a lone surrogate with U+FFFD beats losing the whole write.
export function cleanText(value: string): string;
export function cleanText(value: string | null | undefined): string | null;
export function cleanText(value: string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return storableText(value);
}

// Every id this service issues is a UUID (randomUUID). Anything else cannot name a stored row, so the
// store answers "not found" without asking Postgres, which would refuse some of it (U+0000).
const ISSUED_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True when `id` has the shape of an id this service issues. */
export function isIssuedId(id: string): boolean {
  return ISSUED_ID.test(id);
}

/**
 * JSON text for a json/jsonb parameter, without U+0000 or a lone surrogate in any string or object key
 * (a model's tool-call arguments are an object whose keys it chose).
 */
export function toJson(value: unknown): string {
  const json = JSON.stringify(value ?? null);
  // JSON.stringify writes U+0000 as `\u0000` and a lone surrogate as a `\udXXX` escape, in keys too.
  if (!json.includes('\\u0000') && !/\\ud[89a-f]/i.test(json)) return json;
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v === 'string') return cleanText(v);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? cleanKeys(v) : v;
  });
}

/** `record` itself, or, when a key needs cleaning, a copy with every key cleaned (of keys that then clash, the last wins). */
function cleanKeys(record: object): object {
  const keys = Object.keys(record);
  if (!keys.some((key) => textProblem(key) !== null)) return record;
  return Object.fromEntries(keys.map((key) => [cleanText(key), (record as Record<string, unknown>)[key]]));
}

/** Trimmed, or null when blank: the spec's rule for prompts and the store's for optional titles. */
export function trimToNull(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? cleanText(trimmed) : null;
}
