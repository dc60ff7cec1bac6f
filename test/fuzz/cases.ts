// The fuzzer's requests: every endpoint of the API, each request derived from (seed, index) alone so
// any failure reproduces by itself (FUZZ_SEED, FUZZ_ONLY). Bodies start valid and are then broken:
// malformed JSON, wrong types, huge, deep, NUL and lone-surrogate strings and keys, odd ids, methods,
// headers and content types. Raw-socket cases cover what no HTTP client sends.

export interface Ids {
  chats: string[];
  searches: string[];
}

export interface FuzzRequest {
  index: number;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** Why it looks like this, for the failure report. */
  mutations: string[];
}

/** mulberry32: small, fast, and the same sequence on every machine. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;

type BodyKind = 'createChat' | 'patchChat' | 'star' | 'suggest' | 'message' | 'completion' | 'stream' | 'createSearch' | 'run' | 'searchChat' | null;

/** Every route of the spec, with `:chat` and `:search` standing for ids. */
export const ROUTES: ReadonlyArray<[string, string, BodyKind]> = [
  ['GET', '/health', null],
  ['GET', '/v1/auth/session', null],
  ['GET', '/v1/active-runs', null],
  ['GET', '/v1/chat-tools', null],
  ['GET', '/v1/workspace-items', null],
  ['GET', '/v1/models', null],
  ['GET', '/metrics', null],
  ['GET', '/v1/chats', null],
  ['POST', '/v1/chats', 'createChat'],
  ['GET', '/v1/chats/:chat', null],
  ['PATCH', '/v1/chats/:chat', 'patchChat'],
  ['PATCH', '/v1/chats/:chat/star', 'star'],
  ['DELETE', '/v1/chats/:chat', null],
  ['POST', '/v1/chats/title/suggest', 'suggest'],
  ['POST', '/v1/chats/:chat/messages', 'message'],
  ['POST', '/v1/chat-completions', 'completion'],
  ['POST', '/v1/chat-completions/stream', 'stream'],
  ['POST', '/v1/chats/:chat/stream/attach', null],
  ['GET', '/v1/searches', null],
  ['POST', '/v1/searches', 'createSearch'],
  ['GET', '/v1/searches/:search', null],
  ['DELETE', '/v1/searches/:search', null],
  ['PATCH', '/v1/searches/:search/star', 'star'],
  ['POST', '/v1/searches/:search/run', 'run'],
  ['POST', '/v1/searches/:search/run/stream', 'run'],
  ['POST', '/v1/searches/:search/run/stream/attach', null],
  ['POST', '/v1/searches/:search/chat', 'searchChat'],
];

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

function validBody(kind: Exclude<BodyKind, null>, r: Rand, ids: Ids): Record<string, unknown> {
  const user = { role: 'user', content: pick(r, ['hi', 'hello there', 'what is 2+2?']) };
  switch (kind) {
    case 'createChat':
      return { title: 'fuzz', provider: 'provider_c', model: 'm', enabledTools: ['web_search'], messages: [user] };
    case 'patchChat':
      return { title: 'renamed', additionalSystemPrompt: 'be brief', enabledTools: [] };
    case 'star':
      return { starred: r() < 0.5 };
    case 'suggest':
      return { chatId: pick(r, ids.chats), content: 'a message to name' };
    case 'message':
      return {
        role: pick(r, ['user', 'assistant', 'system', 'tool']),
        content: 'note',
        name: 'n',
        metadata: { source: 'fuzz', n: [1, 2, { k: 'v' }] },
        attachments:
          r() < 0.5
            ? [{ kind: 'text', filename: 'a.txt', mimeType: 'text/plain', text: 'body' }]
            : [{ kind: 'image', filename: 'a.png', mimeType: 'image/png', dataUrl: `data:image/png;base64,${PNG}` }],
      };
    case 'completion':
      return { ...(r() < 0.3 ? { chatId: pick(r, ids.chats) } : {}), provider: pick(r, ['provider_a', 'provider_b', 'provider_c', 'provider_d']), model: 'm', messages: [user], temperature: 0.3, maxTokens: 64 };
    case 'stream': {
      const persist = r() < 0.6;
      return { ...(persist && r() < 0.3 ? { chatId: pick(r, ids.chats) } : {}), persist, provider: 'provider_c', model: 'm', messages: [user] };
    }
    case 'createSearch':
      return { title: 'fuzz search', query: pick(r, ['rust', 'postgres jsonb', 'q']), reuseByQuery: r() < 0.5 };
    case 'run':
      return { query: 'fuzz query', type: pick(r, ['auto', 'fast', 'deep', 'instant']), numResults: 3 };
    case 'searchChat':
      return { title: 'from a search' };
  }
}

function deep(levels: number, leaf: unknown = 1): unknown {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = i % 2 ? [v] : { d: v };
  return v;
}

const WEIRD_VALUES: ReadonlyArray<[string, () => unknown]> = [
  ['null', () => null],
  ['zero', () => 0],
  ['negative', () => -1],
  ['huge number', () => 1e308],
  ['float', () => 0.5],
  ['true', () => true],
  ['empty array', () => []],
  ['empty object', () => ({})],
  ['empty string', () => ''],
  ['blank string', () => '   \t\n'],
  ['NUL string', () => 'a\u0000b'],
  ['lone high surrogate', () => 'x\ud800'],
  ['lone low surrogate', () => '\udc00y'],
  ['reversed pair', () => '\ude00\ud83d'],
  ['emoji', () => '😀🧪'],
  ['control characters', () => '\u0001\u001f\u007f\u2028'],
  ['100 KB string', () => 'x'.repeat(100_000)],
  ['array of NUL', () => ['\u0000']],
  ['object with NUL key', () => ({ 'k\u0000': 1 })],
  ['object with surrogate key', () => ({ '\ud800': 'v' })],
  ['proto key', () => JSON.parse('{"__proto__":{"polluted":1},"constructor":{"prototype":1}}')],
  ['deep 63', () => deep(63)],
  ['deep 200', () => deep(200)],
  ['number string', () => '123'],
  ['uuid', () => '00000000-0000-4000-8000-000000000000'],
];

const RAW_BODIES: ReadonlyArray<[string, () => string | Buffer]> = [
  ['empty', () => ''],
  ['truncated', () => '{"title":'],
  ['garbage', () => 'not json at all'],
  ['trailing brace', () => '{"a":1}}'],
  ['null', () => 'null'],
  ['array', () => '[1,2,3]'],
  ['string', () => '"str"'],
  ['number', () => '42'],
  ['BOM', () => '\ufeff{"title":"x"}'],
  ['escaped NUL', () => '{"title":"\\u0000","query":"\\u0000","content":"\\u0000"}'],
  ['escaped lone surrogate', () => '{"title":"\\ud800","content":"\\udfff","role":"user"}'],
  ['escaped NUL key', () => '{"\\u0000":1,"metadata":{"\\u0000":"\\u0000"}}'],
  ['invalid UTF-8 bytes', () => Buffer.from([0x7b, 0x22, 0x74, 0x69, 0x74, 0x6c, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0xaf, 0x22, 0x7d])],
  ['raw NUL byte', () => Buffer.from('{"title":"a\u0000b"}', 'utf8')],
  ['deep arrays 10,000', () => `${'['.repeat(10_000)}${']'.repeat(10_000)}`],
  ['deep metadata 10,000', () => `{"role":"user","content":"x","metadata":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}}`],
  ['unclosed deep 50,000', () => '{"a":'.repeat(50_000)],
  ['duplicate keys', () => '{"title":"a","title":5}'],
  ['1.2 MB', () => JSON.stringify({ title: 't'.repeat(1_200_000) })],
];

const ODD_IDS: readonly string[] = [
  '%00', 'x%00', '%ZZ', '%', '%ED%A0%80', '%F0%9F%98%80', '%2F', '..', 'x', 'null', '0', '-1',
  '00000000-0000-4000-8000-000000000000', '00000000-0000-4000-8000-00000000000G', 'a'.repeat(2000), '%E2%80%AE', '%C0%80', 'ABC%20DEF',
];

/** Replaces, deletes or adds one field somewhere in `value`, returning what it did. */
function mutateField(r: Rand, value: Record<string, unknown>): string {
  const spots: Array<[Record<string, unknown> | unknown[], string | number]> = [];
  const walk = (v: unknown, depth: number) => {
    if (depth > 6 || v === null || typeof v !== 'object') return;
    for (const k of Array.isArray(v) ? v.keys() : Object.keys(v)) {
      spots.push([v as Record<string, unknown>, k]);
      walk((v as Record<string | number, unknown>)[k], depth + 1);
    }
  };
  walk(value, 0);
  const op = r();
  if (op < 0.15 || spots.length === 0) {
    const [label, make] = pick(r, WEIRD_VALUES);
    const key = pick(r, ['extra', '\u0000', '\ud800', '__proto__', 'constructor', 'metadata', '😀']);
    value[key] = make();
    return `add ${JSON.stringify(key)} = ${label}`;
  }
  const [holder, key] = pick(r, spots);
  if (op < 0.3) {
    if (Array.isArray(holder)) holder.splice(key as number, 1);
    else delete holder[key as string];
    return `delete ${String(key)}`;
  }
  const [label, make] = pick(r, WEIRD_VALUES);
  (holder as Record<string | number, unknown>)[key] = make();
  return `set ${String(key)} = ${label}`;
}

export function makeRequest(seed: number, index: number, ids: Ids): FuzzRequest {
  const r = rng((seed * 1_000_003 + index) >>> 0);
  const [method0, template, kind] = pick(r, ROUTES);
  const mutations: string[] = [];
  let method = method0;
  let path = template.replace(':chat', pick(r, ids.chats)).replace(':search', pick(r, ids.searches));
  const headers: Record<string, string> = {};
  let body: string | Buffer | undefined;

  if (template.includes(':') && r() < 0.3) {
    const odd = pick(r, ODD_IDS);
    path = template.replace(':chat', odd).replace(':search', odd);
    mutations.push(`id ${odd.slice(0, 40)}`);
  }
  if (r() < 0.1) {
    path = pick(r, ['/api', '']) + path;
  }
  if (r() < 0.08) {
    path += pick(r, ['?a=%00', '?%ZZ=1', `?q=${'q'.repeat(5000)}`, '?limit=-1', '#frag', '?a=1&a=2']);
    mutations.push('query string');
  }
  if (r() < 0.06) {
    method = pick(r, ['GET', 'POST', 'PATCH', 'PUT', 'DELETE']);
    mutations.push(`method ${method}`);
  }

  if (kind && method !== 'GET' && method !== 'DELETE') {
    const roll = r();
    if (roll < 0.2) {
      body = JSON.stringify(validBody(kind, r, ids));
      mutations.push('valid body');
    } else if (roll < 0.75) {
      const value = validBody(kind, r, ids);
      const n = 1 + Math.floor(r() * 3);
      for (let i = 0; i < n; i++) mutations.push(mutateField(r, value));
      body = JSON.stringify(value);
    } else {
      const [label, make] = pick(r, RAW_BODIES);
      body = make();
      mutations.push(`raw body: ${label}`);
    }
  } else if (r() < 0.1) {
    const [label, make] = pick(r, RAW_BODIES);
    body = make();
    mutations.push(`unexpected body: ${label}`);
  }
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (r() < 0.1) {
    const ct = pick(r, ['', 'text/plain', 'application/json; charset=utf-16', 'application/merge-patch+json', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded', 'APPLICATION/JSON']);
    if (ct) headers['content-type'] = ct;
    else delete headers['content-type'];
    mutations.push(`content-type ${ct || 'none'}`);
  }
  if (r() < 0.05) {
    headers.authorization = pick(r, ['Bearer', 'Bearer ' + 'x'.repeat(4000), 'Basic Zm9vOmJhcg==', 'bearer\ttoken']);
    mutations.push('authorization');
  }
  if (r() < 0.05) {
    headers['x-odd'] = pick(r, ['\t', 'é'.repeat(10), 'v'.repeat(8000)]);
    mutations.push('odd header value');
  }
  return { index, method, path, headers, body, mutations };
}

/** Raw requests the bundled server answers itself (asserted against the service directly). */
export const RAW_ANSWERED: ReadonlyArray<[string, string]> = [
  ['chunked body', 'POST /v1/chats HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n{"tit\r\n9\r\nle":"c"}\r\n0\r\n\r\n'],
  ['expect 100-continue', 'POST /v1/chats HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}'],
  ['20 KB URL', `GET /health?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`],
  ['10 KB header', `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(10_000)}\r\nConnection: close\r\n\r\n`],
  ['many headers', `GET /health HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 40 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}Connection: close\r\n\r\n`],
  ['percent-encoded NUL path', 'GET /v1/chats/%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ['raw UTF-8 in path', 'GET /v1/chats/\xc3\xa9 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
];

/** Raw requests uWebSockets.js 20.30 leaves unanswered: the documented nginx answers them. */
export const RAW_NEEDS_PROXY: ReadonlyArray<[string, string]> = [
  ['HTTP/1.0', 'GET /health HTTP/1.0\r\n\r\n'],
  ['HTTP/1.0 POST', 'POST /v1/chats HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}'],
  ['no Host', 'GET /health HTTP/1.1\r\nConnection: close\r\n\r\n'],
  ['underscore header', 'GET /health HTTP/1.1\r\nHost: x\r\nX_A: 1\r\nConnection: close\r\n\r\n'],
  ['dot header', 'GET /health HTTP/1.1\r\nHost: x\r\nX.A: 1\r\nConnection: close\r\n\r\n'],
  ['garbage line', 'GARBAGE\r\n\r\n'],
  ['extra token in request line', 'GET /health HTTP/1.1 extra\r\nHost: x\r\n\r\n'],
  ['absolute URI', 'GET http://x/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ['PROPFIND', 'PROPFIND /v1/chats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ['MKCOL', 'MKCOL /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ['lowercase method', 'get /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ['space in header name', 'GET /health HTTP/1.1\r\nHost: x\r\nX A: 1\r\nConnection: close\r\n\r\n'],
  ['100 KB URL', `GET /health?${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`],
  ['bare LF', 'GET /health HTTP/1.1\nHost: x\nConnection: close\n\n'],
  ['NUL in request line', 'GET /he\u0000alth HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'],
  ['bad content-length', 'POST /v1/chats HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\nConnection: close\r\n\r\n{}'],
];
