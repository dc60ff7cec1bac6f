// The web client's entry: asks for the token when the server wants one, loads the model picker and
// the workspace list, and routes `#chat/<id>`, `#search/<id>`, `#new-chat`, `#new-search` to views.
import { api, onTokenNeeded, signOut } from './api.js';
import { chatView } from './chat.js';
import { loadModels } from './models.js';
import { searchView } from './search.js';
import { markCurrent, refreshSidebar } from './sidebar.js';

const main = document.getElementById('main');
const dialog = document.getElementById('token-dialog');
let view = null;

onTokenNeeded((reason) => {
  const form = dialog.querySelector('form');
  form.reset();
  if (reason) dialog.querySelector('.reason').textContent = reason;
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok' ? form.elements.token.value.trim() || null : null), { once: true });
  });
});

const showError = (err) => main.replaceChildren(Object.assign(document.createElement('p'), { className: 'status error', role: 'alert', textContent: err.message }));
const changed = () => refreshSidebar().catch(() => {});

/** Whose workspace this is (token mode: the user the key belongs to), with a way to leave it. */
function showSession(session) {
  if (!session.user) return;
  const who = document.getElementById('whoami');
  who.querySelector('.who').textContent = session.user.admin ? 'admin (ADMIN_TOKEN)' : session.user.name;
  who.querySelector('.who').title = `workspace of ${session.user.id}`;
  who.querySelector('.sign-out').addEventListener('click', () => {
    signOut();
    location.hash = '';
    location.reload();
  });
  who.hidden = false;
}


/**
 * A part of the address's hash as text. A badly encoded one (`%E0%A4%A`, typed or pasted) is taken as
 * written: no chat or search has such an id, so its view says it was not found, and the page goes on.
 */
function hashPart(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function route() {
  view?.close();
  const [kind, id] = location.hash.slice(1).split('/').map(hashPart);
  const ctx = { onChanged: changed };
  view = kind === 'search' || kind === 'new-search' ? searchView(main, id || null, ctx) : chatView(main, kind === 'chat' ? id : null, ctx);
  markCurrent();
}

try {
  showSession(await api.get('/v1/auth/session'));
  await Promise.all([loadModels(), refreshSidebar()]);
  addEventListener('hashchange', route);
  route();
} catch (err) {
  showError(err);
}
