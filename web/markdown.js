// Markdown for answers and messages: CommonMark + GFM tables through marked, every piece of HTML
// through DOMPurify (model output is untrusted), code blocks highlighted by highlight.js with a copy
// button. A streamed answer is rendered incrementally: blocks the parser has closed are rendered once
// and kept; only the last, still open block is rendered again, at most once per animation frame.
import { marked } from './vendor-marked.js';
import DOMPurify from './vendor-purify.js';
import hljs from './vendor-highlight.js';

const purify = DOMPurify(window);
const SANITIZE = {
  USE_PROFILES: { html: true }, // no SVG, no MathML
  // Media would load from wherever the text says; forms and styles have no place in an answer.
  FORBID_TAGS: ['style', 'form', 'audio', 'video', 'source', 'track', 'picture'],
  FORBID_ATTR: ['style', 'srcset', 'ping', 'action', 'formaction', 'id', 'name'],
  // The page finds its templates by id and its tool cards by data-tool-call-id: an answer naming them
  // would stand in for them (the next view or card would not open).
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};
const SAFE_HREF = /^(?:https?:|mailto:|#)/i;
const SAFE_IMG = /^data:image\/(?:png|jpeg|gif|webp);/i;

// Links open elsewhere and never as the page; pictures only from data the text carries itself, so
// rendering an answer sends no request anywhere.
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.hasAttribute('href')) {
    if (SAFE_HREF.test(node.getAttribute('href').trim())) {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer nofollow');
    } else node.removeAttribute('href');
  }
  if (node.nodeName === 'IMG' && !SAFE_IMG.test(node.getAttribute('src') ?? '')) node.removeAttribute('src');
});

/** Sanitized DOM for some Markdown tokens; code highlighted only when `final` (an open block still grows). */
function renderTokens(tokens, final) {
  const fragment = purify.sanitize(marked.parser(tokens), SANITIZE);
  // The newlines between blocks would show up in the message's text; the blocks carry the layout.
  for (const node of [...fragment.childNodes]) if (node.nodeType === Node.TEXT_NODE && !node.data.trim()) node.remove();
  for (const code of fragment.querySelectorAll('pre > code')) decorateCode(code, final);
  return fragment;
}

function decorateCode(code, final) {
  const lang = /\blanguage-([\w+#.-]+)/.exec(code.className)?.[1];
  // An unknown language is left plain: guessing costs time and often guesses wrong.
  if (final && (lang ? hljs.getLanguage(lang) : true)) hljs.highlightElement(code);
  const pre = code.parentElement;
  const wrap = document.createElement('div');
  wrap.className = 'code';
  pre.replaceWith(wrap);
  const copy = document.createElement('button');
  copy.type = 'button';
  copy.className = 'copy';
  // The label is drawn by CSS, so the message's text stays the text of the answer.
  copy.setAttribute('aria-label', 'Copy code');
  copy.addEventListener('click', () => copyText(code.textContent, copy));
  wrap.append(copy, pre);
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.dataset.state = 'copied';
  } catch {
    button.dataset.state = 'failed';
  }
  setTimeout(() => delete button.dataset.state, 1500);
}

/** Renders the whole of `text` into `el` (a stored message). */
export function renderMarkdown(el, text) {
  el.classList.add('markdown');
  el.replaceChildren(renderTokens(marked.lexer(text ?? ''), true));
}

/** Index of the last token that is not blank space: the block that may still grow. */
function openIndex(tokens) {
  let i = tokens.length - 1;
  while (i > 0 && tokens[i].type === 'space') i--;
  return Math.max(i, 0);
}

/**
 * A streamed answer in `el`: `append(delta)` as deltas arrive, `finish(text)` with the final text.
 * Closed blocks are moved into the DOM once; `committed` counts the characters they cover, so each
 * frame parses only the open tail.
 */
export function markdownStream(el) {
  el.classList.add('markdown');
  el.replaceChildren();
  const tail = document.createElement('div');
  tail.className = 'open-block';
  el.append(tail);
  let text = '';
  let committed = 0;
  let frame = 0;

  function flush(final) {
    cancelAnimationFrame(frame);
    frame = 0;
    const tokens = marked.lexer(text.slice(committed));
    const open = final ? tokens.length : openIndex(tokens);
    if (open > 0) {
      el.insertBefore(renderTokens(tokens.slice(0, open), true), tail);
      for (let i = 0; i < open; i++) committed += tokens[i].raw.length;
    }
    tail.replaceChildren(...(final ? [] : [renderTokens(tokens.slice(open), false)]));
  }

  return {
    append(delta) {
      text += delta.replace(/\r\n?/g, '\n');
      frame ||= requestAnimationFrame(() => flush(false));
    },
    /** The run ended: `full`, when given, is the canonical text (it may differ from the deltas). */
    finish(full) {
      if (full != null && full !== text) {
        text = full;
        committed = 0;
        el.replaceChildren(tail);
      }
      flush(true);
    },
    get text() {
      return text;
    },
  };
}
