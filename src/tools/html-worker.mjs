// @ts-check
// Runs inside the CPU pool (src/base/cpu-pool.ts, via html-pool.ts): HTML → plaintext with html-to-text, off the event loop,
// because big pages take long enough to stall every run sharing the thread.
// Plain JavaScript on purpose: worker threads then need no TypeScript loader, however the thread that
// owns the pool was started (tsx CLI, node --import tsx, an actor host thread).
import { convert } from 'html-to-text';

const SKIP = ['script', 'style', 'noscript', 'template', 'svg', 'canvas', 'iframe', 'nav', 'button', 'select', 'img', 'picture', 'video', 'audio', 'form'];

/** @param {string} href @param {string} baseUrl */
function absolute(href, baseUrl) {
  if (/^\s*javascript:/i.test(href)) return '';
  try {
    return new URL(href, baseUrl).href;
  } catch {
    return href;
  }
}

/** @param {string} baseUrl @returns {import('html-to-text').HtmlToTextOptions} */
function options(baseUrl) {
  return {
    wordwrap: false,
    selectors: [
      ...SKIP.map((selector) => ({ selector, format: 'skip' })),
      ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } })),
      {
        selector: 'a',
        options: {
          // html-to-text's own baseUrl only prefixes strings; resolve like a browser would instead.
          pathRewrite: (/** @type {string} */ href) => absolute(href, baseUrl),
          hideLinkHrefIfSameAsText: true,
          noAnchorUrl: true,
          linkBrackets: ['(', ')'],
        },
      },
      // Layout tables lose little and data tables stay readable as aligned columns.
      { selector: 'table', format: 'dataTable', options: { maxColumnWidth: 60 } },
      // Hidden boilerplate.
      { selector: '[aria-hidden=true]', format: 'skip' },
      { selector: '[hidden]', format: 'skip' },
    ],
  };
}

/** @param {string} html */
function titleOf(html) {
  const m = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html.slice(0, 200_000));
  if (!m) return null;
  const t = convert(m[1] ?? '', { wordwrap: false }).replace(/\s+/g, ' ').trim();
  return t || null;
}

/** @param {{ html: string, baseUrl: string }} task */
export default function htmlToText(task) {
  const text = convert(task.html, options(task.baseUrl))
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title: titleOf(task.html), text };
}
