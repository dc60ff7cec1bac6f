// Talks to the service: JSON calls and POST streams, with the bearer token kept in localStorage and
// asked for when the server answers 401. The API lives beside the page (`/` or `/api/`) unless a
// `<meta name="api-base">` points elsewhere (a page on another origin, with CORS_ORIGINS set).
import { sseParser } from './sse.js';

const base = new URL(document.querySelector('meta[name="api-base"]')?.content || '.', location.href);
const TOKEN_KEY = 'conversations.token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let askToken = async () => null;
let asking = null;
/** `fn(reason)` resolves to a token, or null when the user gives up. */
export const onTokenNeeded = (fn) => (askToken = fn);

/** Forgets the token: the next request asks for one (another person's key, say). */
export const signOut = () => localStorage.removeItem(TOKEN_KEY);

async function send(method, path, body, signal) {
  for (;;) {
    const token = localStorage.getItem(TOKEN_KEY);
    const headers = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(new URL(path.slice(1), base), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (res.status !== 401) return res;
    // Another request may have got a new token meanwhile: retry with it before asking again.
    if (localStorage.getItem(TOKEN_KEY) !== token) continue;
    localStorage.removeItem(TOKEN_KEY);
    asking ??= askToken(token ? 'That token was refused. Try again.' : '').finally(() => (asking = null));
    const next = await asking;
    if (!next) throw new ApiError(401, 'an access token is needed: reload the page to enter it');
    localStorage.setItem(TOKEN_KEY, next);
  }
}

async function ok(res) {
  if (res.ok) return res;
  let message = `${res.status} ${res.statusText}`;
  try {
    message = (await res.json()).message ?? message;
  } catch {
    // not JSON: keep the status line
  }
  throw new ApiError(res.status, message);
}

const call = async (method, path, body) => (await ok(await send(method, path, body))).json();

export const api = {
  get: (path) => call('GET', path),
  post: (path, body) => call('POST', path, body),
  patch: (path, body) => call('PATCH', path, body),
  delete: (path) => call('DELETE', path),
  /** POSTs and hands each SSE event to `onEvent(name, data)`; resolves when the stream ends. */
  async stream(path, body, onEvent, signal) {
    const res = await ok(await send('POST', path, body, signal));
    const feed = sseParser((name, data) => onEvent(name, JSON.parse(data)));
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      feed(value);
    }
  },
};
