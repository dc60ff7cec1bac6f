// The search view: run a search as a stream, show the results, the answer and its citations,
// re-attach to a run still going, and continue the search as a chat.
import { api } from './api.js';
import { confirmDelete } from './confirm.js';
import { fromTemplate, h } from './dom.js';
import { renderMarkdown } from './markdown.js';

const link = (url, text) => h('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, text || url);

export function searchView(main, searchId, { onChanged }) {
  const root = fromTemplate('search-tpl');
  main.replaceChildren(root);
  const $ = (s) => root.querySelector(s);
  const form = $('form');
  const status = $('.status');
  const leaving = new AbortController();
  let search = null;
  let run = null; // the stream this view follows; a new search stops following the last one

  const say = (text, isError = false) => {
    status.textContent = text;
    status.classList.toggle('error', isError);
  };

  function showResults(results) {
    $('.results').hidden = results.length === 0;
    $('.result-list').replaceChildren(...results.map((r) =>
      h('li', {}, link(r.url, r.title), r.snippet && h('p', {}, r.snippet))));
  }

  function showAnswer(text, citations = []) {
    $('.answer').hidden = !text && citations.length === 0;
    renderMarkdown($('.answer-text'), text ?? '');
    $('.citations').replaceChildren(...citations.map((c) =>
      h('li', {}, link(c.url, c.title), c.text && h('blockquote', {}, c.text))));
  }

  function showSearch(s) {
    search = s;
    $('.delete').hidden = false;
    $('.title').textContent = s.title || s.query || 'Search';
    form.elements.query.value = s.query ?? '';
    showResults(s.results ?? []);
    showAnswer(s.answerText, s.answerCitations);
    const errors = [s.error, s.answerError].filter(Boolean);
    say(errors.join(' · '), errors.length > 0);
  }

  async function follow(path, body) {
    run?.abort();
    const mine = (run = new AbortController());
    const signal = AbortSignal.any([leaving.signal, mine.signal]);
    root.setAttribute('aria-busy', 'true');
    say('Searching…');
    try {
      await api.stream(path, body, (event, d) => {
        if (event === 'search_results') showResults(d.results);
        else if (event === 'answer') showAnswer(d.answerText, d.answerCitations);
        else if (event === 'search_error' || event === 'answer_error') say(d.error, true);
        else if (event === 'done') showSearch(d.search);
        else if (event === 'error') say(d.message, true);
      }, signal);
    } catch (err) {
      if (signal.aborted) return;
      if (err.status === 404 && path.endsWith('/attach')) {
        // Nothing running: a run still going when the search was read may have ended since (a search
        // has no running mark to tell), so what is stored now is what to show.
        say('');
        showSearch((await api.get(`/v1/searches/${encodeURIComponent(search.id)}`)).search);
      } else say(err.message, true);
    } finally {
      if (run === mine) root.removeAttribute('aria-busy');
    }
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const query = form.elements.query.value.trim();
    try {
      search = (await api.post('/v1/searches', { query })).search;
      $('.delete').hidden = false;
      history.replaceState(null, '', `#search/${encodeURIComponent(search.id)}`);
      $('.title').textContent = query;
      showResults([]);
      showAnswer(null);
      onChanged();
      await follow(`/v1/searches/${encodeURIComponent(search.id)}/run/stream`, {});
      onChanged();
    } catch (err) {
      say(err.message, true);
    }
  });

  $('.to-chat').addEventListener('click', async () => {
    try {
      const { chat } = await api.post(`/v1/searches/${encodeURIComponent(search.id)}/chat`, {});
      onChanged();
      location.hash = `#chat/${encodeURIComponent(chat.id)}`;
    } catch (err) {
      say(err.message, true);
    }
  });

  $('.delete').addEventListener('click', async () => {
    if (!(await confirmDelete(`Delete the search “${search.title || search.query || 'Search'}” and its results?`))) return;
    try {
      run?.abort();
      await api.delete(`/v1/searches/${encodeURIComponent(search.id)}`);
      onChanged();
      location.hash = '#new-search';
    } catch (err) {
      say(err.message, true);
    }
  });

  if (searchId) {
    api.get(`/v1/searches/${encodeURIComponent(searchId)}`)
      .then(({ search }) => {
        showSearch(search);
        return follow(`/v1/searches/${encodeURIComponent(searchId)}/run/stream/attach`);
      })
      .catch((err) => say(err.message, true));
  } else form.elements.query.focus();
  return { close: () => leaving.abort() };
}
