// fetch_url: fetches a page the way a browser navigation would and returns plaintext for the model.
// Network safety (address checks, pinning, redirects, caps) lives in guarded-get.ts and net-guard.ts.
import { capText, messageOf, previewOf, requireString } from './args.ts';
import { guardedGet, type ResponseHead } from './guarded-get.ts';
import { WorkerHeapLimitError } from '../base/cpu-pool.ts';
import { htmlToTextInPool } from './html-pool.ts';
import type { AddressCheck, Resolver } from './net-guard.ts';
import { ToolError, type ServiceTool, type ToolContext } from './types.ts';

export interface FetchUrlOptions {
  timeoutMs?: number;
  maxBytes?: number;
  maxRedirects?: number;
  maxChars?: number;
  /** Tests only: replaces the private-address policy (still bypassed by FETCH_URL_ALLOW_PRIVATE=true). */
  checkAddress?: AddressCheck;
  /** Tests only: replaces DNS resolution. */
  resolve?: Resolver;
}

const DEFAULTS = { timeoutMs: 20_000, maxBytes: 5 * 1024 * 1024, maxRedirects: 5, maxChars: 100_000 };

/** What a current desktop Chrome sends on a top-level navigation; some sites refuse anything less. */
export const NAVIGATION_HEADERS: Record<string, string> = {
  'user-agent':
    'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/138.0.0.0 Safari/537.36',
  accept:
    'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8',
  'accept-language': 'en-US,en;q=0.9',
  'accept-encoding': 'gzip, deflate, br',
  'upgrade-insecure-requests': '1',
  'sec-ch-ua': '"Not)A;Brand";v="8", "Chromium";v="138", "Google Chrome";v="138"',
  'sec-ch-ua-mobile': '?0',
  'sec-ch-ua-platform': '"Windows"',
  'sec-fetch-dest': 'document',
  'sec-fetch-mode': 'navigate',
  'sec-fetch-site': 'none',
  'sec-fetch-user': '?1',
};

type Kind = 'html' | 'text';

function mediaType(head: ResponseHead): string {
  return String(head.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

/** null: not something we turn into text. An absent type is sniffed after download. */
function kindOf(type: string): Kind | null | 'unknown' {
  if (type === '' || type === 'application/octet-stream') return 'unknown';
  if (type === 'text/html' || type === 'application/xhtml+xml') return 'html';
  if (type.startsWith('text/')) return 'text';
  if (/^application\/([\w.+-]+\+)?(json|xml)$/.test(type)) return 'text';
  if (['application/javascript', 'application/x-javascript', 'application/ld+json', 'application/x-ndjson', 'application/yaml', 'application/x-yaml'].includes(type)) return 'text';
  return null;
}

/** The encoding a byte order mark names; it wins over any label, as in a browser (WHATWG "decode"). */
function bomCharset(body: Buffer): string | null {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  return null;
}

function sniff(body: Buffer): Kind | null {
  const bom = bomCharset(body);
  const head = body.subarray(0, 4096);
  if (!bom && head.includes(0)) return null; // binary (UTF-16 text has zero bytes too, but a BOM)
  const start = (bom ? decode(head, bom) : head.toString('latin1')).trimStart().slice(0, 512).toLowerCase();
  return start.startsWith('<!doctype html') || start.includes('<html') || start.includes('<body') ? 'html' : 'text';
}

function charsetOf(head: ResponseHead, body: Buffer, kind: Kind): string {
  const bom = bomCharset(body);
  if (bom) return bom;
  const header = /charset\s*=\s*"?([\w.:-]+)/i.exec(String(head.headers['content-type'] ?? ''));
  if (header) return header[1]!;
  if (kind === 'html') {
    const meta = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(body.subarray(0, 4096).toString('latin1'));
    if (meta) return meta[1]!;
  }
  return 'utf-8';
}

function decode(body: Buffer, charset: string): string {
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    return new TextDecoder('utf-8').decode(body); // unknown label: UTF-8 is the web's default
  }
}

export function createFetchUrlTool(options: FetchUrlOptions = {}): ServiceTool {
  const o = { ...DEFAULTS, ...options };
  return {
    name: 'fetch_url',
    description:
      'Fetches a web page or text document by URL (http/https) and returns its readable text: HTML is converted ' +
      'to plaintext with links kept as (URL); plain text and JSON are returned as is. Images, PDFs and other ' +
      `binary files are not supported. Long pages are cut at ${o.maxChars} characters. Use it to read pages found ` +
      'with web_search or URLs the user gives.',
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', description: 'Absolute http:// or https:// URL to fetch.' } },
      required: ['url'],
      additionalProperties: false,
    },
    summarize(args) {
      return `Fetching ${typeof args.url === 'string' ? previewOf(args.url, 150) : 'a URL'}`;
    },
    async run(args, ctx: ToolContext) {
      const raw = requireString('fetch_url', args, 'url').trim();
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        throw new ToolError(`fetch_url: "${previewOf(raw, 200)}" is not an absolute URL`);
      }
      const timeout = AbortSignal.timeout(o.timeoutMs);
      const signal = AbortSignal.any([ctx.signal, timeout]);
      let res;
      try {
        res = await guardedGet(url, {
          headers: NAVIGATION_HEADERS,
          signal,
          maxRedirects: o.maxRedirects,
          maxBytes: o.maxBytes,
          allowPrivate: ctx.config.FETCH_URL_ALLOW_PRIVATE,
          check: o.checkAddress,
          resolve: o.resolve,
          inspect(head) {
            const type = mediaType(head);
            if (kindOf(type) === null) {
              throw new ToolError(
                `refusing to read ${head.url.href}: content type ${type} is not text (only HTML, plain text and JSON are supported)`,
              );
            }
          },
        });
      } catch (err) {
        if (err instanceof ToolError) throw err;
        if (timeout.aborted) throw new ToolError(`fetching ${url.href} timed out after ${o.timeoutMs} ms`, { cause: err });
        if (ctx.signal.aborted) throw new ToolError(`fetching ${url.href} was cancelled`, { cause: err });
        throw new ToolError(`fetching ${url.href} failed: ${messageOf(err)}`, { cause: err });
      }
      const type = mediaType(res);
      const declared = kindOf(type);
      const kind = declared === 'unknown' ? sniff(res.body) : declared;
      if (!kind) {
        throw new ToolError(`refusing to read ${res.url.href}: content (${type || 'no content type'}) looks binary`);
      }
      const text = decode(res.body, charsetOf(res, res.body, kind));
      let title: string | null = null;
      let content = text;
      if (kind === 'html') {
        try {
          ({ title, text: content } = await htmlToTextInPool(ctx.cpu, { html: text, baseUrl: res.url.href }, signal));
        } catch (err) {
          if (timeout.aborted) throw new ToolError(`converting ${res.url.href} timed out after ${o.timeoutMs} ms`, { cause: err });
          if (ctx.signal.aborted) throw new ToolError(`fetching ${url.href} was cancelled`, { cause: err });
          const why = err instanceof WorkerHeapLimitError ? `the page needs more than ${err.maxHeapMb} MB to convert` : messageOf(err);
          throw new ToolError(`could not convert the HTML of ${res.url.href} to text: ${why}`, { cause: err });
        }
      }
      const lines = [`URL: ${res.url.href}`];
      if (res.redirectedFrom.length) lines.push(`Redirected from: ${url.href}`);
      lines.push(`Status: ${res.status}`, `Content-Type: ${type || 'unknown'}`);
      if (title) lines.push(`Title: ${title}`);
      if (res.truncated) lines.push(`Note: download stopped at ${o.maxBytes} bytes; the rest of the document is missing.`);
      const output = `${lines.join('\n')}\n\n${capText(content, o.maxChars, 'page text')}`;
      const preview = `${res.status} ${type || 'unknown'}${title ? ` — ${title}` : ''}: ${previewOf(content, 160)}`;
      return { output, preview };
    },
  };
}

export const fetchUrlTool = createFetchUrlTool();
