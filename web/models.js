// The model picker: every provider's models from /v1/models; the last choice is remembered.
import { api } from './api.js';
import { h } from './dom.js';

const select = document.getElementById('model');
const KEY = 'conversations.model';

export async function loadModels() {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { providers } = await api.get('/v1/models');
    const groups = Object.entries(providers)
      .filter(([, p]) => p.models.length > 0)
      .map(([name, p]) => h('optgroup', { label: name }, p.models.map((m) => h('option', { value: `${name}:${m}` }, `${m} · ${name}`))));
    // Lists load in the background at start: a page opened right then waits a moment for them.
    const loading = Object.values(providers).some((p) => p.loadedAt === null && p.error === null);
    if (groups.length > 0 || !loading) {
      select.replaceChildren(...groups);
      break;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
  const saved = localStorage.getItem(KEY);
  if (saved) selectModel(...saved.split(/:(.*)/s));
  select.addEventListener('change', () => localStorage.setItem(KEY, select.value));
}

/** `{ provider, model }` of the picker, or null when no model is available. */
export function currentModel() {
  const i = select.value.indexOf(':');
  return i < 0 ? null : { provider: select.value.slice(0, i), model: select.value.slice(i + 1) };
}

export function selectModel(provider, model) {
  const value = `${provider}:${model}`;
  if ([...select.options].some((o) => o.value === value)) select.value = value;
}
