// Client of engine_a, the search-and-answer engine (wire-formats.md §5):
// `POST {base}/search` and `POST {base}/answer`, key in `x-api-key`, camelCase JSON.
// Used by the web_search tool and by search runs, so it returns our own shapes plus `raw`.
import type { Config } from '../base/config.ts';
import type { AnswerCitation, SearchResultItem } from '../base/types.ts';
import { EngineError } from './errors.ts';
import { arr, engineFetch, errorText, joinUrl, num, obj, parseAnswer, str, webUrl, type EngineRequestOptions } from './http.ts';
import { sliceUnits, storableText } from '../base/text.ts';

export interface EngineAEndpoint {
  baseUrl: string;
  apiKey: string;
}

export type EngineASearchType = 'auto' | 'fast' | 'deep' | 'instant' | 'neural' | 'keyword' | 'hybrid';

/** Which content fields the engine should attach to each result (each costs extra on the real engine). */
export interface EngineAContents {
  text?: { maxCharacters?: number } | boolean;
  highlights?: { maxCharacters?: number; numSentences?: number; query?: string } | boolean;
  summary?: { query?: string } | boolean;
}

export interface EngineASearchOptions extends EngineAEndpoint {
  query: string;
  type?: EngineASearchType;
  numResults?: number;
  includeDomains?: string[];
  excludeDomains?: string[];
  contents?: EngineAContents;
}

export interface EngineASearchResult {
  requestId: string | null;
  results: SearchResultItem[];
  latencyMs: number;
  raw: unknown;
}

export interface EngineAAnswerOptions extends EngineAEndpoint {
  query: string;
}

export interface EngineAAnswerResult {
  answerText: string | null;
  answerRequestId: string | null;
  citations: AnswerCitation[];
  latencyMs: number;
  raw: unknown;
}

/** The endpoint from configuration, or the names of the variables that are missing. */
export function engineAEndpointFromConfig(
  config: Pick<Config, 'ENGINE_A_API_KEY' | 'ENGINE_A_BASE_URL'>,
): EngineAEndpoint | { missing: string[] } {
  const missing: string[] = [];
  if (!config.ENGINE_A_API_KEY) missing.push('ENGINE_A_API_KEY');
  if (!config.ENGINE_A_BASE_URL) missing.push('ENGINE_A_BASE_URL');
  if (missing.length) return { missing };
  return { baseUrl: config.ENGINE_A_BASE_URL!, apiKey: config.ENGINE_A_API_KEY! };
}

/** Longest snippet we keep from full `text` when the engine sent no highlights. */
const SNIPPET_FROM_TEXT_CHARS = 500;

function snippetOf(r: Record<string, unknown>): string | null {
  const highlights = arr(r.highlights).map(str).filter((h): h is string => h !== null && h.trim() !== '');
  if (highlights.length) return highlights.join(' … ');
  const text = str(r.text)?.trim();
  if (!text) return null;
  return text.length > SNIPPET_FROM_TEXT_CHARS ? `${sliceUnits(text, SNIPPET_FROM_TEXT_CHARS)}…` : text;
}

export function mapEngineAResult(value: unknown): SearchResultItem | null {
  const r = obj(value);
  const url = webUrl(r.url) ?? webUrl(r.id);
  if (!url) return null;
  return {
    url,
    title: str(r.title),
    snippet: snippetOf(r),
    summary: str(r.summary),
    publishedDate: str(r.publishedDate),
    author: str(r.author),
    score: num(r.score),
    favicon: str(r.favicon),
    image: str(r.image),
  };
}

function mapCitation(value: unknown): AnswerCitation | null {
  const c = obj(value);
  const url = webUrl(c.url) ?? webUrl(c.id);
  if (!url) return null;
  return {
    url,
    title: str(c.title),
    author: str(c.author),
    publishedDate: str(c.publishedDate),
    text: str(c.text),
  };
}

/** What every real answer of each call has (wire-formats.md §5). */
const REQUIRED = {
  '/search': { field: 'a results list', has: (d: Record<string, unknown>) => Array.isArray(d.results) },
  '/answer': { field: 'an answer', has: (d: Record<string, unknown>) => d.answer !== undefined && d.answer !== null },
};

async function post(
  what: '/search' | '/answer',
  endpoint: EngineAEndpoint,
  body: Record<string, unknown>,
  opts: EngineRequestOptions,
): Promise<{ data: Record<string, unknown>; latencyMs: number }> {
  if (!endpoint.apiKey) throw new EngineError('engine_a', 'engine_a API key is empty (ENGINE_A_API_KEY)');
  const res = await engineFetch(
    'engine_a',
    what,
    joinUrl(endpoint.baseUrl, what),
    {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'x-api-key': endpoint.apiKey },
      body: JSON.stringify(body),
    },
    opts,
  );
  if (res.status < 200 || res.status > 299) {
    const message = errorText(res);
    throw new EngineError('engine_a', `engine_a ${what} failed with HTTP ${res.status}: ${message}`, {
      status: res.status,
      engineMessage: message,
    });
  }
  const { field, has } = REQUIRED[what];
  return { data: parseAnswer('engine_a', what, res, field, has), latencyMs: res.latencyMs };
}

export async function engineASearch(
  opts: EngineASearchOptions,
  req: EngineRequestOptions = {},
): Promise<EngineASearchResult> {
  const body: Record<string, unknown> = { query: opts.query, type: opts.type ?? 'auto' };
  if (opts.numResults !== undefined) body.numResults = opts.numResults;
  if (opts.includeDomains?.length) body.includeDomains = opts.includeDomains;
  if (opts.excludeDomains?.length) body.excludeDomains = opts.excludeDomains;
  if (opts.contents) body.contents = opts.contents;
  const { data, latencyMs } = await post('/search', opts, body, req);
  const results = arr(data.results)
    .map(mapEngineAResult)
    .filter((r): r is SearchResultItem => r !== null);
  return { requestId: str(data.requestId), results, latencyMs, raw: data };
}

export async function engineAAnswer(
  opts: EngineAAnswerOptions,
  req: EngineRequestOptions = {},
): Promise<EngineAAnswerResult> {
  const { data, latencyMs } = await post('/answer', opts, { query: opts.query, text: true, stream: false }, req);
  const citations = arr(data.citations)
    .map(mapCitation)
    .filter((c): c is AnswerCitation => c !== null);
  const answer = data.answer;
  // Structured-output answers come back as objects; keep them readable rather than dropping them.
  const answerText = typeof answer === 'string' ? storableText(answer) : answer == null ? null : JSON.stringify(answer);
  return { answerText, answerRequestId: str(data.requestId), citations, latencyMs, raw: data };
}
