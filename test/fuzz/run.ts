// Sends the fuzzer's requests (cases.ts) and judges every answer: a status under 500, a complete body,
// a JSON `message` on every error, and an SSE stream that ends with `done` or `error`. Raw-socket cases
// go to the service when it can answer them and through the documented nginx when it cannot.
import { makeRequest, RAW_ANSWERED, RAW_NEEDS_PROXY, type FuzzRequest, type Ids } from './cases.ts';
import { rawExchange } from '../helpers/raw-http.ts';

export interface FuzzOptions {
  url: string;
  port: number;
  /** nginx in front of the service (deploy/nginx.conf), or null when it is not available. */
  proxyPort: number | null;
  requests: number;
  seed: number;
  concurrency: number;
  ids: Ids;
  /** Only these indexes (reproducing a failure). */
  only?: number[];
}

export interface Failure {
  index: number | string;
  kind: 'server error' | 'unanswered' | 'partial' | 'no message';
  detail: string;
  request: string;
}

export interface FuzzReport {
  sent: number;
  byStatus: Record<string, number>;
  failures: Failure[];
  rawDirect: { answered: number; sent: number };
  rawUnansweredDirect: string[];
  rawProxied: number | null;
}

const REQUEST_TIMEOUT_MS = 60_000;

export function describeRequest(q: FuzzRequest): string {
  const body = q.body === undefined ? '' : ` body(${q.body.length}): ${String(q.body).slice(0, 120)}`;
  return `#${q.index} ${q.method} ${q.path.slice(0, 120)} [${q.mutations.join('; ')}]${body}`;
}

async function judge(q: FuzzRequest, res: Response): Promise<Omit<Failure, 'index' | 'request'> | null> {
  let text: string;
  try {
    text = await res.text();
  } catch (err) {
    return { kind: 'partial', detail: `status ${res.status}, body cut: ${(err as Error).message}` };
  }
  if (res.status >= 500) return { kind: 'server error', detail: `${res.status} ${text.slice(0, 300)}` };
  const type = res.headers.get('content-type') ?? '';
  if (type.startsWith('text/event-stream')) {
    const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
    const last = events.at(-1);
    if (last !== 'done' && last !== 'error') return { kind: 'partial', detail: `stream ended after ${events.join(',') || 'no event'}` };
    return null;
  }
  if (res.status >= 400 && q.method !== 'HEAD') {
    try {
      const m = JSON.parse(text).message;
      if (typeof m !== 'string' || m === '') throw new Error('no message');
    } catch {
      return { kind: 'no message', detail: `${res.status} ${text.slice(0, 200)}` };
    }
  }
  return null;
}

async function send(opts: FuzzOptions, q: FuzzRequest): Promise<{ status: number | null; failure: Failure | null }> {
  const hasBody = q.body !== undefined && q.method !== 'GET' && q.method !== 'HEAD';
  const fail = (f: Omit<Failure, 'index' | 'request'>) => ({ index: q.index, request: describeRequest(q), ...f });
  let res: Response;
  try {
    res = await fetch(opts.url + q.path, {
      method: q.method,
      headers: q.headers,
      body: hasBody ? (q.body as BodyInit) : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    const cause = (err as Error & { cause?: Error }).cause?.message ?? '';
    return { status: null, failure: fail({ kind: 'unanswered', detail: `${(err as Error).message} ${cause}` }) };
  }
  const problem = await judge(q, res);
  return { status: res.status, failure: problem ? fail(problem) : null };
}

export async function runFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const report: FuzzReport = { sent: 0, byStatus: {}, failures: [], rawDirect: { answered: 0, sent: 0 }, rawUnansweredDirect: [], rawProxied: null };
  const indexes = opts.only ?? Array.from({ length: opts.requests }, (_, i) => i);
  let next = 0;
  const worker = async () => {
    while (next < indexes.length) {
      const q = makeRequest(opts.seed, indexes[next++]!, opts.ids);
      const { status, failure } = await send(opts, q);
      report.sent++;
      const key = status === null ? 'none' : String(status);
      report.byStatus[key] = (report.byStatus[key] ?? 0) + 1;
      if (failure) report.failures.push(failure);
    }
  };
  await Promise.all(Array.from({ length: opts.concurrency }, worker));

  // Raw requests the service answers itself.
  for (const [name, request] of RAW_ANSWERED) {
    const r = await rawExchange(opts.port, request, 15_000);
    report.rawDirect.sent++;
    if (r.status !== null && r.complete && r.status < 500) report.rawDirect.answered++;
    else report.failures.push({ index: `raw:${name}`, kind: r.status === null ? 'unanswered' : r.status >= 500 ? 'server error' : 'partial', detail: r.head.slice(0, 200), request: name });
  }
  // Raw requests it cannot answer: sent anyway (the server must survive them), judged through nginx.
  await Promise.all(
    RAW_NEEDS_PROXY.map(async ([name, request]) => {
      const r = await rawExchange(opts.port, request, 1500);
      if (r.status === null) report.rawUnansweredDirect.push(name);
    }),
  );
  if (opts.proxyPort !== null) {
    report.rawProxied = 0;
    for (const [name, request] of [...RAW_ANSWERED, ...RAW_NEEDS_PROXY]) {
      const r = await rawExchange(opts.proxyPort, request, 15_000);
      report.rawProxied++;
      if (r.status === null || !r.complete || r.status >= 500) {
        report.failures.push({ index: `proxied:${name}`, kind: r.status === null ? 'unanswered' : r.status >= 500 ? 'server error' : 'partial', detail: r.head.slice(0, 200), request: name });
      }
    }
  }
  return report;
}

/** Every DELETE in the fuzz may remove them: a few of each, made fresh. */
export async function seedIds(url: string): Promise<Ids> {
  const ids: Ids = { chats: [], searches: [] };
  for (let i = 0; i < 4; i++) {
    const chat = await (await fetch(`${url}/v1/chats`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ title: `seed ${i}` }) })).json();
    ids.chats.push((chat as { chat: { id: string } }).chat.id);
    const search = await (await fetch(`${url}/v1/searches`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: `seed ${i}` }) })).json();
    ids.searches.push((search as { search: { id: string } }).search.id);
  }
  return ids;
}
