// The workspace list: chats and searches together, starred ones first, a starred-only filter and a
// star toggle on each item.
import { api } from './api.js';
import { h } from './dom.js';

const list = document.getElementById('items');
const starredOnly = document.getElementById('starred-only');
let items = [];

export async function refreshSidebar() {
  items = (await api.get('/v1/workspace-items')).items;
  render();
}

/** Re-marks the open item (the page's hash changed). */
export const markCurrent = () => render();

function render() {
  // The server sorts by updatedAt; a stable sort keeps that order within starred and unstarred.
  const shown = items.filter((i) => i.starred || !starredOnly.checked).sort((a, b) => b.starred - a.starred);
  list.replaceChildren(...shown.map(row));
  if (shown.length === 0) list.append(h('li', { class: 'empty' }, starredOnly.checked ? 'Nothing starred yet' : 'Nothing here yet'));
}

function row(item) {
  const href = `#${item.type}/${item.id}`;
  const label = item.title || (item.type === 'search' && item.query) || 'Untitled chat';
  return h(
    'li',
    { class: item.type },
    h('a', { href, 'aria-current': href === location.hash ? 'page' : null }, h('span', { class: 'kind' }, item.type), ' ', label),
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

async function toggleStar(item) {
  const path = `/v1/${item.type === 'chat' ? 'chats' : 'searches'}/${encodeURIComponent(item.id)}/star`;
  const res = await api.patch(path, { starred: !item.starred });
  Object.assign(item, res.chat ?? res.search);
  render();
}

starredOnly.addEventListener('change', render);
