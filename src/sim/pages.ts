// A few web pages for fetch_url tests: HTML with boilerplate around a real article, other content
// types, a redirect, a large page and a slow one.
import { delayUnlessClosed, sendJson, sendText } from './http.ts';
import type { Ctx } from './state.ts';

const HTML = 'text/html; charset=utf-8';

export const ARTICLE_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>The Quiet Life of Tide Pools</title>
  <style>body { font-family: serif; } .ad { display: none; } nav a { color: red; }</style>
  <script>window.tracking = { id: "UA-SIM-1" }; console.log("tracking script must not be extracted");</script>
</head>
<body>
  <nav class="site-nav"><a href="/pages/">Home</a> | <a href="/pages/plain.txt">Plain</a> | <a href="https://example.org/about">About us</a></nav>
  <header><h1>The Quiet Life of Tide Pools</h1><p class="byline">By Marina Shore, 12 March 2024</p></header>
  <main>
    <article>
      <p>Tide pools form where the sea retreats twice a day and leaves water caught in hollows of rock.
      For the few hours until the tide returns, each pool is a small world with its own temperature,
      salinity and oxygen level.</p>
      <h2>Who lives there</h2>
      <p>Sea anemones, hermit crabs, periwinkles and small fish such as blennies are the usual residents.
      They cope with heat, fresh rain water and hungry gulls, which is why
      <a href="https://example.org/tide-pool-ecology">tide pool ecology</a> is a favourite subject of field courses.</p>
      <ul>
        <li>Anemones close up to keep water in when exposed.</li>
        <li>Hermit crabs trade shells as they grow.</li>
        <li>Blennies can breathe air for short periods.</li>
      </ul>
      <h2>Visiting without harm</h2>
      <p>Step only on bare rock, turn stones back the way you found them, and never take animals home.
      The keyword for this article is PERIWINKLE-42.</p>
    </article>
  </main>
  <aside class="ad">Buy sunscreen now! Limited offer.</aside>
  <footer><p>&copy; 2024 Coastal Notes. <a href="/pages/privacy">Privacy</a></p></footer>
  <script src="/pages/app.js"></script>
</body>
</html>
`;

/** A 1×1 red PNG: real bytes so sniffing and image handling see a valid file. */
export const PNG_BYTES = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
);

let bigPage: Buffer | null = null;
/** ~3 MB of HTML, built once: enough to exercise a fetcher's size limit. */
function big(): Buffer {
  if (!bigPage) {
    const para = '<p>This is filler paragraph number NNN of a very large page. It exists to test size limits. ' + 'Lorem ipsum dolor sit amet. '.repeat(20) + '</p>\n';
    const parts = ['<!DOCTYPE html><html><head><title>A very large page</title></head><body><h1>A very large page</h1>\n'];
    let size = parts[0]!.length;
    for (let i = 0; size < 3 * 1024 * 1024; i++) {
      const p = para.replace('NNN', String(i));
      parts.push(p);
      size += p.length;
    }
    parts.push('</body></html>\n');
    bigPage = Buffer.from(parts.join(''));
  }
  return bigPage;
}

export async function handlePages(ctx: Ctx): Promise<void> {
  const { res } = ctx;
  const method = ctx.req.method ?? 'GET';
  if (method !== 'GET' && method !== 'HEAD') return sendText(res, 405, 'text/plain', 'Method Not Allowed', { allow: 'GET, HEAD' });
  switch (ctx.path) {
    case '':
    case '/':
      return sendText(res, 200, HTML, '<!DOCTYPE html><html><head><title>Pages</title></head><body><ul><li><a href="/pages/article">article</a></li></ul></body></html>');
    case '/article':
      return sendText(res, 200, HTML, ARTICLE_HTML);
    case '/plain.txt':
      return sendText(res, 200, 'text/plain; charset=utf-8', 'Plain text page.\nSecond line with the keyword PLAINTEXT-7.\n');
    case '/data.json':
      return sendJson(res, 200, { name: 'sim', items: [1, 2, 3], nested: { ok: true } });
    case '/image.png':
      return sendText(res, 200, 'image/png', PNG_BYTES);
    case '/redirect': {
      const to = ctx.query.get('to') ?? '/pages/article';
      res.writeHead(302, { location: to, 'content-type': HTML, 'content-length': 0 });
      return void res.end();
    }
    case '/big':
      return sendText(res, 200, HTML, big());
    case '/slow':
      if (!(await delayUnlessClosed(res, 10_000))) return;
      return sendText(res, 200, HTML, '<!DOCTYPE html><html><head><title>Slow</title></head><body><p>Finally.</p></body></html>');
    case '/status': {
      // Any status on demand, for error-path tests of the fetcher.
      const code = Number.parseInt(ctx.query.get('code') ?? '500', 10);
      const valid = code >= 200 && code <= 599 ? code : 500;
      return sendText(res, valid, HTML, `<html><body><h1>Status ${valid}</h1></body></html>`);
    }
    default:
      return sendText(res, 404, HTML, '<html><body><h1>404 Not Found</h1></body></html>');
  }
}
