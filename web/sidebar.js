// The workspace list: chats and searches together, starred ones first, a starred-only filter and a
// star toggle on each item. With words in the history search box it lists the items that match
// them instead, most relevant first, each with the snippet around the match.
import { api } from './api.js';
import { h } from './dom.js';

const list = document.getElementById('items');
const starredOnly = document.getElementById('starred-only');
const searchForm = document.getElementById('history-search');
const searchStatus = document.getElementById('history-status');
let items = [];
let query = '';
let asked = 0; // answers to older queries arrive late and are dropped

export async function refreshSidebar() {
  const mine = ++asked;
  const path = query ? `/v1/workspace-items?${new URLSearchParams({ q: query, limit: '50' })}` : '/v1/workspace-items';
  try {
    const found = (await api.get(path)).items;
    if (mine !== asked) return;
    items = found;
    sayHistory(query ? `${items.length === 0 ? 'No' : items.length} ${items.length === 1 ? 'match' : 'matches'} for “${query}”` : '');
  } catch (err) {
    if (mine !== asked) return;
    if (!query) throw err;
    items = [];
    sayHistory(err.message, true);
  }
  render();
}

function sayHistory(text, isError = false) {
  searchStatus.hidden = !text;
  searchStatus.textContent = text;
  searchStatus.classList.toggle('error', isError);
}

/** Re-marks the open item (the page's hash changed). */
export const markCurrent = () => render();

function render() {
  // The server sorts by updatedAt (or relevance); a stable sort keeps that order within starred and unstarred.
  const shown = items.filter((i) => i.starred || !starredOnly.checked);
  if (!query) shown.sort((a, b) => b.starred - a.starred);
  list.replaceChildren(...shown.map(row));
  if (shown.length === 0 && !query) list.append(h('li', { class: 'empty' }, starredOnly.checked ? 'Nothing starred yet' : 'Nothing here yet'));
}

function row(item) {
  const href = `#${item.type}/${item.id}`;
  const label = item.title || (item.type === 'search' && item.query) || 'Untitled chat';
  return h(
    'li',
    { class: item.type },
    h('a', { href, 'aria-current': href === location.hash ? 'page' : null }, h('span', { class: 'kind' }, item.type), ' ', label,
      item.match && h('span', { class: 'snippet', 'data-field': item.match.field }, ...marked(item.match.snippet))),
    h(
      'button',
      {
        type: 'button',
        class: 'star',
        'aria-pressed': String(item.starred),
        'aria-label': `Star ${label}`,
        onclick: () => toggleStar(item),
      },
      item.starred ? '★' : '☆',
    ),
  );
}

/** The snippet as text nodes, the query's words (as prefixes, like the search) in <mark>. */
function marked(snippet) {
  const words = query.split(/\s+/).filter(Boolean).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  if (words.length === 0) return [snippet];
  const re = new RegExp(`(${words.join('|')})`, 'giu');
  return snippet.split(re).map((part, i) => (i % 2 === 1 ? h('mark', {}, part) : part));
}

async function toggleStar(item) {
  const path = `/v1/${item.type === 'chat' ? 'chats' : 'searches'}/${encodeURIComponent(item.id)}/star`;
  const res = await api.patch(path, { starred: !item.starred });
  Object.assign(item, res.chat ?? res.search);
  render();
}

starredOnly.addEventListener('change', render);

// Searches as the user types, once they pause; Enter searches at once.
let typing = 0;
const searchNow = () => {
  clearTimeout(typing);
  query = searchForm.elements.q.value.trim();
  refreshSidebar().catch(() => {});
};
searchForm.elements.q.addEventListener('input', () => {
  clearTimeout(typing);
  typing = setTimeout(searchNow, 250);
});
searchForm.addEventListener('submit', (e) => {
  e.preventDefault();
  searchNow();
});
