// engine_a (search-and-answer JSON API) and engine_b (metasearch JSON), with deterministic results
// derived from the query. A `SIM {…}` directive inside the query scripts failures and delays.
import { parseDirective, type Directive } from './directives.ts';
import { delayUnlessClosed, isObject, newId, ParseFailure, sendJson, sendText } from './http.ts';
import type { Ctx } from './state.ts';

const POOL = [
  'example.org',
  'example.com',
  'docs.example.net',
  'news.example.io',
  'wiki.example.edu',
  'blog.example.dev',
  'research.example.ac',
  'forum.example.info',
];
const SEARCH_TYPES = ['auto', 'fast', 'deep', 'instant', 'neural', 'keyword', 'hybrid'];

function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function slug(q: string): string {
  return (q.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40) || 'result');
}

function titleCase(q: string): string {
  return q.trim().replace(/\s+/g, ' ').replace(/\b\w/g, (c) => c.toUpperCase()) || 'Result';
}

function matchesDomain(host: string, domain: string): boolean {
  const d = domain.toLowerCase().replace(/^https?:\/\//, '').replace(/\/.*$/, '');
  return host === d || host.endsWith('.' + d);
}

interface Hit {
  host: string;
  url: string;
  title: string;
  published: string;
  text: string;
  index: number;
}

function hits(query: string, n: number, include: string[], exclude: string[], offset = 0): Hit[] {
  const seed = hash(query);
  const hosts = (include.length ? include.map((d) => d.toLowerCase().replace(/^https?:\/\//, '').replace(/\/.*$/, '')) : POOL).filter(
    (h) => !exclude.some((d) => matchesDomain(h, d)),
  );
  if (hosts.length === 0) return [];
  const out: Hit[] = [];
  for (let k = 0; k < n; k++) {
    const i = k + offset;
    const host = hosts[(seed + i) % hosts.length]!;
    const day = (seed + i * 7919) % 900;
    const published = new Date(Date.UTC(2023, 0, 1) + day * 86_400_000).toISOString();
    const t = titleCase(query);
    out.push({
      host,
      url: `https://${host}/${slug(query)}/${i + 1}`,
      title: `${t} — ${host} #${i + 1}`,
      published,
      text:
        `${t}. This page on ${host} discusses ${query.trim()} in detail. ` +
        `Result ${i + 1} explains the main points, gives examples and links to further reading. ` +
        `It was published on ${published.slice(0, 10)}.`,
      index: i,
    });
  }
  return out;
}

function wants(v: unknown): { max: number } | null {
  if (v === true) return { max: Infinity };
  if (isObject(v)) return { max: typeof v.maxCharacters === 'number' ? v.maxCharacters : Infinity };
  return null;
}

function directiveOf(query: string): { d: Directive; q: string } {
  const p = parseDirective(query);
  return { d: p.directive, q: p.rest };
}

function engineAuth(ctx: Ctx): boolean {
  const key = ctx.req.headers['x-api-key'];
  if (typeof key === 'string' && key.trim() !== '') return true;
  sendJson(ctx.res, 401, { error: 'Missing or invalid API key. Pass it in the x-api-key header.' });
  return false;
}

export async function handleEngineA(ctx: Ctx): Promise<void> {
  const { res } = ctx;
  const route = ctx.req.method === 'POST' ? ctx.path : '';
  if (route !== '/search' && route !== '/answer') return sendJson(res, 404, { error: `Not found: ${ctx.req.method} ${ctx.path}` });
  if (!engineAuth(ctx)) return;
  const b = ctx.body;
  if (b instanceof ParseFailure || !isObject(b)) return sendJson(res, 400, { error: 'Invalid request body: expected JSON' });
  if (typeof b.query !== 'string' || b.query.trim() === '') return sendJson(res, 400, { error: 'Invalid request body: query is required' });
  const { d, q } = directiveOf(b.query);
  const isSearch = route === '/search';
  if (!(await delayUnlessClosed(res, (isSearch ? d.searchDelayMs : d.answerDelayMs) ?? 0))) return;
  if (!(await ctx.state.gates.pass(res, isSearch ? d.searchGate : d.answerGate))) return;
  const status = isSearch ? d.searchStatus : d.answerStatus;
  if (status !== undefined) return sendJson(res, status, { error: `Simulated ${isSearch ? 'search' : 'answer'} failure (${status})` });
  if (isSearch) return search(ctx, b, q);
  const cites = hits(q, 3, [], []).map((h) => ({
    id: h.url,
    url: h.url,
    title: h.title,
    author: `Author ${h.index + 1}`,
    publishedDate: h.published,
    ...(b.text === true ? { text: h.text } : {}),
  }));
  sendJson(res, 200, {
    answer: `Simulated answer to: ${q.trim().slice(0, 80)}`,
    citations: cites,
    requestId: newId(''),
    costDollars: { total: 0.005 },
  });
}

function search(ctx: Ctx, b: Record<string, unknown>, q: string): void {
  const n = b.numResults ?? 10;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 100) {
    return sendJson(ctx.res, 400, { error: 'Invalid request body: numResults must be an integer between 1 and 100' });
  }
  const type = b.type ?? 'auto';
  if (typeof type !== 'string' || !SEARCH_TYPES.includes(type)) {
    return sendJson(ctx.res, 400, { error: `Invalid request body: type must be one of ${SEARCH_TYPES.join(', ')}` });
  }
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const contents = isObject(b.contents) ? b.contents : {};
  const text = wants(contents.text ?? b.text);
  const highlights = wants(contents.highlights);
  const summary = contents.summary === true || isObject(contents.summary);
  const results = hits(q, n, strings(b.includeDomains), strings(b.excludeDomains)).map((h) => {
    const r: Record<string, unknown> = {
      id: h.url,
      url: h.url,
      // Real results sometimes lack a title, author or date; clients must cope.
      title: h.index === 6 ? null : h.title,
      score: Math.round((0.5 - h.index * 0.03) * 1000) / 1000,
      favicon: `https://${h.host}/favicon.ico`,
      image: `https://${h.host}/images/${h.index + 1}.png`,
    };
    if (h.index !== 4) r.publishedDate = h.published;
    if (h.index % 2 === 0) r.author = `Author ${h.index + 1}`;
    if (text) r.text = h.text.slice(0, text.max);
    if (highlights) {
      r.highlights = [h.text.split('. ')[1]!.slice(0, highlights.max)];
      r.highlightScores = [0.46];
    }
    if (summary) r.summary = `Summary: ${h.title} covers ${q.trim()}.`;
    return r;
  });
  const withContents = text || highlights || summary;
  sendJson(ctx.res, 200, {
    requestId: newId(''),
    resolvedSearchType: type === 'keyword' ? 'keyword' : 'neural',
    searchTime: 100 + (hash(q) % 500),
    results,
    costDollars: { total: Math.round((0.005 + (withContents ? 0.001 * results.length : 0)) * 1000) / 1000 },
  });
}

const esc = (s: string): string => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export async function handleEngineB(ctx: Ctx): Promise<void> {
  const { res } = ctx;
  if (ctx.req.method !== 'GET' || ctx.path !== '/search') return sendText(res, 404, 'text/html; charset=utf-8', '<h1>Not Found</h1>');
  if (ctx.upstream === 'engine_b_nojson') {
    return sendText(res, 403, 'text/html; charset=utf-8', '<!DOCTYPE html><html><head><title>403 Forbidden</title></head><body><h1>Forbidden</h1><p>You don\'t have the permission to access the requested resource.</p></body></html>');
  }
  const raw = ctx.query.get('q') ?? '';
  if (raw.trim() === '') return sendJson(res, 400, { error: 'No query' });
  const { d, q } = directiveOf(raw);
  if (!(await delayUnlessClosed(res, d.searchDelayMs ?? 0)) || !(await ctx.state.gates.pass(res, d.searchGate))) return;
  if (d.searchStatus === 429) return sendText(res, 429, 'text/plain; charset=utf-8', 'Too Many Requests');
  if (d.searchStatus !== undefined) return sendJson(res, d.searchStatus, { error: 'search error' });
  const page = Math.max(1, Number.parseInt(ctx.query.get('pageno') ?? '1', 10) || 1);
  const list = hits(q, 10, [], [], (page - 1) * 10);
  if (ctx.query.get('format') !== 'json') {
    const items = list.map((h) => `<article class="result"><h3><a href="${esc(h.url)}">${esc(h.title)}</a></h3><p class="content">${esc(h.text)}</p></article>`);
    return sendText(res, 200, 'text/html; charset=utf-8', `<!DOCTYPE html><html><head><title>${esc(q)} - search</title></head><body>${items.join('')}</body></html>`);
  }
  sendJson(res, 200, {
    query: q,
    results: list.map((h) => ({
      url: h.url,
      title: h.title,
      content: h.text.slice(0, 200),
      engine: `e${(h.index % 3) + 1}`,
      engines: [`e${(h.index % 3) + 1}`, 'e4'],
      positions: [h.index + 1, h.index + 3],
      score: Math.round((3 - h.index * 0.2) * 100) / 100,
      category: 'general',
      publishedDate: h.index % 3 === 0 ? null : h.published.slice(0, 19),
    })),
    answers: [],
    corrections: [],
    infoboxes: [],
    suggestions: [`${q.trim()} tutorial`, `${q.trim()} examples`],
    unresponsive_engines: [],
  });
}
