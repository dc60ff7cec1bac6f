// Client of engine_b, a metasearch instance's JSON API (wire-formats.md §6): `GET {base}/search?q=…&format=json`.
// Instances answer 403 with an HTML page when JSON output is disabled and a plain-text 429 when rate limited,
// so the status is checked before any parsing and both get messages that say what to fix.
import type { SearchResultItem } from '../base/types.ts';
import { EngineError } from './errors.ts';
import { arr, engineFetch, errorText, excerpt, joinUrl, num, obj, parseAnswer, str, webUrl, type EngineRequestOptions } from './http.ts';

export interface EngineBSearchOptions {
  baseUrl: string;
  query: string;
  /** The engine has no count parameter; results are cut locally. */
  numResults?: number;
  /** Optional `language` parameter (e.g. `en`). */
  language?: string;
}

export interface EngineBSearchResult {
  results: SearchResultItem[];
  suggestions: string[];
  latencyMs: number;
  raw: unknown;
}

export function mapEngineBResult(value: unknown): SearchResultItem | null {
  const r = obj(value);
  const url = webUrl(r.url);
  if (!url) return null;
  const content = str(r.content)?.trim();
  return {
    url,
    title: str(r.title),
    snippet: content || null,
    summary: null,
    publishedDate: str(r.publishedDate),
    author: str(r.author),
    score: num(r.score),
    favicon: null,
    image: str(r.img_src) || str(r.thumbnail) || null,
  };
}

export async function engineBSearch(
  opts: EngineBSearchOptions,
  req: EngineRequestOptions = {},
): Promise<EngineBSearchResult> {
  const url = joinUrl(opts.baseUrl, '/search');
  url.searchParams.set('q', opts.query);
  url.searchParams.set('format', 'json');
  if (opts.language) url.searchParams.set('language', opts.language);
  const res = await engineFetch(
    'engine_b',
    '/search',
    url,
    { method: 'GET', headers: { accept: 'application/json' } },
    req,
  );
  if (res.status === 403 && !res.contentType.includes('json')) {
    throw new EngineError(
      'engine_b',
      `engine_b refused JSON output (HTTP 403) at CHAT_ENGINE_B_BASE_URL=${opts.baseUrl}: the instance must allow ` +
        `the JSON output format (add "json" to search.formats in its settings so format=json works)`,
      { status: 403, engineMessage: excerpt(res.text) },
    );
  }
  if (res.status === 429) {
    const message = errorText(res);
    throw new EngineError('engine_b', `engine_b rate-limited the request (HTTP 429): ${message}; try again later`, {
      status: 429,
      engineMessage: message,
    });
  }
  if (res.status < 200 || res.status > 299) {
    const message = errorText(res);
    throw new EngineError('engine_b', `engine_b /search failed with HTTP ${res.status}: ${message}`, {
      status: res.status,
      engineMessage: message,
    });
  }
  const data = parseAnswer('engine_b', '/search', res, 'a results list', (d) => Array.isArray(d.results));
  let results = arr(data.results)
    .map(mapEngineBResult)
    .filter((r): r is SearchResultItem => r !== null);
  if (opts.numResults !== undefined) results = results.slice(0, Math.max(0, opts.numResults));
  const suggestions = arr(data.suggestions).filter((s): s is string => typeof s === 'string');
  return { results, suggestions, latencyMs: res.latencyMs, raw: data };
}
