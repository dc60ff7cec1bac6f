// A chat's own controls: rename, delete (after a confirmation), and the settings the API stores per
// chat (enabledTools, additionalSystemPrompt; the model is the one its last completion used). A new
// chat's settings create it, so a prompt can be set before the first message.
import { api } from './api.js';
import { confirmDelete } from './confirm.js';
import { h } from './dom.js';
import { currentModel } from './models.js';

let toolsLoading = null;
const availableTools = () => (toolsLoading ??= api.get('/v1/chat-tools').then((r) => r.tools, (err) => {
  toolsLoading = null;
  throw err;
}));

/**
 * `current()` is the open chat (or null); `adopt(id)` makes a chat created here the open one;
 * `show(chat)` is to be called whenever the chat was (re)loaded.
 */
export function chatControls(root, { current, adopt, onChanged, say }) {
  const $ = (s) => root.querySelector(s);
  const [title, renameForm, settings, form] = ['.title', '.rename-form', '.settings', '.settings-form'].map($);
  const settingsStatus = $('.settings-status');
  const path = () => `/v1/chats/${encodeURIComponent(current().id)}`;

  function show(chat) {
    $('.rename').hidden = $('.delete').hidden = !chat;
    title.textContent = chat ? chat.title || 'Untitled chat' : 'New chat';
    $('.model-note').textContent = chat?.lastUsedModel
      ? `Model: ${chat.lastUsedModel} · ${chat.lastUsedProvider} (the picker above; a chat keeps the last one used).`
      : 'Model: the one chosen in the picker above.';
    form.elements.prompt.value = chat?.additionalSystemPrompt ?? '';
    if (settings.open) fillTools(chat);
  }

  async function fillTools(chat) {
    try {
      const tools = await availableTools();
      // A new chat gets every tool unless told otherwise, as the API does.
      const on = new Set(chat?.enabledTools ?? tools.map((t) => t.name));
      $('.tool-list').replaceChildren(...tools.map((t) =>
        h('label', { title: t.description }, h('input', { type: 'checkbox', name: 'tool', value: t.name, checked: on.has(t.name) }), ` ${t.name}`)));
    } catch (err) {
      settingsStatus.textContent = err.message;
    }
  }

  settings.addEventListener('toggle', () => settings.open && fillTools(current()));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const wanted = {
      additionalSystemPrompt: form.elements.prompt.value.trim() || null,
      enabledTools: [...form.querySelectorAll('input[name=tool]:checked')].map((i) => i.value),
    };
    try {
      let chat;
      if (current()) chat = (await api.patch(path(), wanted)).chat;
      else {
        const pick = currentModel();
        chat = (await api.post('/v1/chats', { ...pick, ...wanted, additionalSystemPrompt: wanted.additionalSystemPrompt ?? undefined })).chat;
        adopt(chat.id);
      }
      Object.assign(current(), chat);
      show(current());
      settingsStatus.textContent = 'Saved.';
      onChanged();
    } catch (err) {
      settingsStatus.textContent = err.message;
    }
  });

  const renaming = (on) => {
    renameForm.hidden = !on;
    title.hidden = on;
    if (on) {
      renameForm.elements.title.value = current().title ?? '';
      renameForm.elements.title.select();
    }
  };
  $('.rename').addEventListener('click', () => renaming(true));
  renameForm.querySelector('.cancel').addEventListener('click', () => renaming(false));
  renameForm.addEventListener('submit', async (e) => {
    e.preventDefault();
    try {
      Object.assign(current(), (await api.patch(path(), { title: renameForm.elements.title.value.trim() })).chat);
      renaming(false);
      show(current());
      onChanged();
    } catch (err) {
      say(err.message, true);
    }
  });

  $('.delete').addEventListener('click', async () => {
    const chat = current();
    if (!(await confirmDelete(`Delete the chat “${chat.title || 'Untitled chat'}” and all its messages?`))) return;
    try {
      await api.delete(path());
      onChanged();
      location.hash = '#new-chat';
    } catch (err) {
      say(err.message, true);
    }
  });

  return { show };
}
