// The chat view: the stored transcript, a streamed answer, tool calls as cards upserted by
// toolCallId, attachments, stop, and re-attaching to a run that is still going when the view opens
// (after a reload, or coming back to the chat).
import { api } from './api.js';
import { chatControls } from './chat-controls.js';
import { fromTemplate, h } from './dom.js';
import { markdownStream, renderMarkdown } from './markdown.js';
import { currentModel, selectModel } from './models.js';

const TOOL_STATUS = { initiated: 'running', completed: 'done', failed: 'failed' };

export function chatView(main, chatId, { onChanged }) {
  const root = fromTemplate('chat-tpl');
  main.replaceChildren(root);
  const [list, status, form] = ['.messages', '.status', '.composer'].map((s) => root.querySelector(s));
  const stop = root.querySelector('.stop');
  const files = form.elements.files;
  const leaving = new AbortController();
  let chat = null;
  let answer = null; // the <li> of the answer being streamed
  let streamed = null; // its Markdown renderer
  let running = false;

  // Keeps the newest text in view while the reader is at the bottom; leaves them be if they scrolled up.
  const follows = () => main.scrollHeight - main.scrollTop - main.clientHeight < 80;
  const toBottom = () => (main.scrollTop = main.scrollHeight);

  const say = (text, isError = false) => {
    status.textContent = text;
    status.classList.toggle('error', isError);
  };

  function attachmentList(attachments = []) {
    if (attachments.length === 0) return null;
    return h('ul', { class: 'attachments' }, attachments.map((a) =>
      h('li', {}, a.kind === 'image' ? h('img', { src: a.dataUrl, alt: a.filename }) : `📄 ${a.filename}`)));
  }

  function renderMessage(m) {
    if (m.role === 'tool') return m.metadata?.kind === 'tool_call' ? upsertTool(m.metadata) : null;
    if (m.role === 'system') {
      return list.appendChild(h('li', { class: 'msg system' }, h('details', {}, h('summary', {}, 'Context'), h('pre', {}, m.content))));
    }
    const body = h('div', { class: 'body' });
    renderMarkdown(body, m.content);
    return list.appendChild(h('li', { class: `msg ${m.role}` },
      h('div', { class: 'who' }, m.role === 'user' ? 'You' : 'Assistant'),
      body,
      attachmentList(m.attachments ?? m.metadata?.attachments),
      m.metadata?.stopped && h('div', { class: 'note' }, 'stopped')));
  }

  function upsertTool(t) {
    let card = list.querySelector(`[data-tool-call-id="${CSS.escape(t.toolCallId)}"]`);
    if (!card) {
      card = h('li', { class: 'tool', 'data-tool-call-id': t.toolCallId },
        h('span', { class: 'tool-name' }, t.name), ' ', h('span', { class: 'tool-status' }),
        h('div', { class: 'tool-summary' }), h('pre', { class: 'tool-result' }));
      // Cards come before the answer they lead to.
      list.insertBefore(card, answer);
    }
    card.dataset.status = t.status;
    card.querySelector('.tool-status').textContent =
      (TOOL_STATUS[t.status] ?? t.status) + (t.durationMs != null ? ` · ${t.durationMs} ms` : '');
    card.querySelector('.tool-summary').textContent = t.summary ?? '';
    card.querySelector('.tool-result').textContent = t.error ?? t.resultPreview ?? '';
    return card;
  }

  async function load(id) {
    chat = (await api.get(`/v1/chats/${encodeURIComponent(id)}`)).chat;
    controls.show(chat);
    answer = streamed = null;
    list.replaceChildren();
    chat.messages.forEach(renderMessage);
    if (chat.lastUsedProvider) selectModel(chat.lastUsedProvider, chat.lastUsedModel);
    // A run that failed while no page followed it left no answer: say why, so it can be sent again.
    if (chat.lastRun?.status === 'failed') say(chat.lastRun.error || 'The last answer failed.', true);
    toBottom();
  }

  /**
   * Follows one stream (a new completion or an attach) to its terminal event. Resolves to `ended`
   * (its `done` or `error` came), `refused` (the server answered the start with an error status, so
   * nothing started) or `cut`.
   */
  async function follow(path, body) {
    running = form.elements.send.disabled = true;
    let ended = false;
    let refused = false;
    const onEvent = (event, d) => {
      const stick = follows();
      handle(event, d);
      if (stick) toBottom();
    };
    const handle = (event, d) => {
      if (event === 'meta') {
        if (!answer) {
          answer = renderMessage({ role: 'assistant', content: '' });
          streamed = markdownStream(answer.querySelector('.body'));
        }
        answer.setAttribute('aria-busy', 'true');
        stop.hidden = false;
        if (d.chatId && !chat) adopt(d.chatId);
      } else if (event === 'tool_call') upsertTool(d);
      else if (event === 'delta') streamed.append(d.text);
      else if (event === 'done') {
        ended = true;
        streamed.finish(d.text);
        say(d.stopped ? 'Stopped.' : 'Answer complete.');
      } else if (event === 'error') {
        ended = true;
        say(d.message, true);
      }
    };
    try {
      await api.stream(path, body, onEvent, leaving.signal);
      if (!ended) say('The stream was cut before its end: reload to re-attach.', true);
    } catch (err) {
      if (leaving.signal.aborted) return 'cut';
      if (err.status === 404 && path.endsWith('/attach')) {
        // Nothing running: a run still going when the chat was read has ended since; show its outcome.
        if (chat?.lastRun?.status === 'running') await load(chat.id);
        return 'cut';
      }
      refused = err.status != null && !ended;
      say(err.message, true);
    } finally {
      if (!ended) streamed?.finish();
      running = form.elements.send.disabled = false;
      stop.hidden = true;
      answer?.removeAttribute('aria-busy');
    }
    // The stored chat is canonical after a run.
    if (chat && !leaving.signal.aborted) await load(chat.id);
    return ended ? 'ended' : refused ? 'refused' : 'cut';
  }

  function adopt(id) {
    chat = { id, messages: [] };
    controls.show(chat);
    history.replaceState(null, '', `#chat/${encodeURIComponent(id)}`);
    onChanged();
  }

  async function send() {
    const text = form.elements.text.value.trim();
    const pick = currentModel();
    if (running || !text) return;
    if (!pick) return say('No model is available: check the server configuration.', true);
    let attachments;
    running = true;
    try {
      attachments = await Promise.all([...files.files].map(readAttachment));
      // Another tab may have gone on with this chat since it was read: the model is sent the
      // conversation as stored, not as this page last saw it.
      if (chat?.messages?.length) await load(chat.id);
    } catch (err) {
      return say(err.message, true);
    } finally {
      running = false;
    }
    const user = { role: 'user', content: text, ...(attachments.length > 0 && { attachments }) };
    // Tool-call log messages stay out of the history: providers expect tool results only right
    // after the call that asked for them. The server stores only what is new.
    const history = (chat?.messages ?? []).filter((m) => m.role !== 'tool').map(toInput);
    const isNew = !chat?.messages?.length;
    const picked = new DataTransfer();
    for (const f of files.files) picked.items.add(f);
    form.reset();
    showFiles();
    say('');
    answer = streamed = null;
    const shown = renderMessage(user);
    toBottom();
    const body = { ...pick, messages: [...history, user], ...(chat && { chatId: chat.id }) };
    const outcome = await follow('/v1/chat-completions/stream', body);
    if (outcome === 'refused') {
      // Nothing was stored (another tab's run, a limit, a refused attachment): the message goes back
      // to the composer, to be sent again, unless something new was typed or picked meanwhile.
      shown.remove();
      if (!form.elements.text.value) form.elements.text.value = text;
      if (files.files.length === 0) files.files = picked.files;
      showFiles();
    }
    if (outcome === 'ended' && isNew && chat) {
      // A short title for the list; a chat keeps working without one.
      api.post('/v1/chats/title/suggest', { chatId: chat.id, content: text }).then(({ chat: named }) => {
        if (named.id === chat?.id) {
          chat.title = named.title;
          controls.show(chat);
        }
        onChanged();
      }, () => {});
    }
    onChanged();
  }

  const showFiles = () => (root.querySelector('.files').textContent = [...files.files].map((f) => f.name).join(', '));
  files.addEventListener('change', showFiles);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    send();
  });
  form.elements.text.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  stop.addEventListener('click', () => {
    if (chat) api.post(`/v1/chats/${encodeURIComponent(chat.id)}/stream/stop`).catch((err) => say(err.message, true));
  });

  const controls = chatControls(root, { current: () => chat, adopt, onChanged, say });
  controls.show(null);
  if (chatId) {
    load(chatId)
      .then(() => follow(`/v1/chats/${encodeURIComponent(chatId)}/stream/attach`))
      .catch((err) => say(err.message, true));
  }
  form.elements.text.focus();
  return { close: () => leaving.abort() };
}

const toInput = (m) => ({
  role: m.role,
  content: m.content,
  ...(m.name && { name: m.name }),
  ...(m.role === 'user' && m.metadata?.attachments && { attachments: m.metadata.attachments }),
});

/** A File as the spec's attachment: PNG and JPEG as images, anything else as text. */
async function readAttachment(file) {
  const common = { filename: file.name, sizeBytes: file.size };
  if (file.type === 'image/png' || file.type === 'image/jpeg') {
    const dataUrl = await new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(reader.result);
      reader.onerror = () => reject(new Error(`cannot read ${file.name}`));
      reader.readAsDataURL(file);
    });
    return { kind: 'image', mimeType: file.type, dataUrl, ...common };
  }
  if (file.type.startsWith('image/')) throw new Error(`${file.name}: images must be PNG or JPEG`);
  return { kind: 'text', mimeType: file.type || 'text/plain', text: await file.text(), ...common };
}
