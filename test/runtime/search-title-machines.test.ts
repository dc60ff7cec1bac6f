// The search and title runs' machines without I/O: messages in, frames and storage commands out.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { searchBehavior, type SearchRunRequest } from '../../actors/search-run.ts';
import { titleBehavior } from '../../actors/title-run.ts';
import { ChatGoneError } from '../../src/store/llm-calls.ts';
import { SearchRunFencedError } from '../../src/store/searches.ts';
import { TITLE_TIMEOUT_MS } from '../../src/chat/title.ts';
import { SEARCH_RUN_STOPPED } from '../../src/base/messages.ts';
import type { ChatSummary, SearchDetail } from '../../src/base/types.ts';
import { fakeDeps, machine } from '../helpers/fake-io.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const SHUTDOWN = 'run cancelled: server is shutting down';
const searchReq: SearchRunRequest = { owner: ADMIN_USER_ID, searchId: 'search-1', endpoint: { baseUrl: 'http://engine', apiKey: 'k' } as SearchRunRequest['endpoint'], query: 'q' };
const detail = { id: 'search-1', query: 'q' } as SearchDetail;
const found = { requestId: 'r1', results: [] };
const answer = { answerText: 'A', answerRequestId: 'r2', answerCitations: [] };

const search = () => machine(searchBehavior, searchReq, fakeDeps());

test('search: each outcome is an event as it arrives, then the run is stored and done', () => {
  const m = search();
  m.tell({ t: 'start' });
  assert.deepEqual(
    m.commands.map((c) => c.c),
    ['search', 'answer'],
  );
  m.tell({ t: 'answer_done', outcome: { ok: false, error: 'engine 500' } });
  m.timers.time += 700;
  m.tell({ t: 'search_done', outcome: { ok: true, value: found } });
  assert.deepEqual(m.sink.names(), ['answer_error', 'search_results']);
  const [save] = m.sent('save');
  assert.deepEqual(save && [save.searchId, save.row.requestId, save.row.error, save.row.answerError], ['search-1', 'r1', null, 'engine 500']);
  assert.equal(save?.row.latencyMs, 700, 'timed on the runtime\'s clock');
  m.tell({ t: 'saved', detail });
  assert.deepEqual(m.sink.events().at(-1), ['done', { search: detail }]);
  assert.deepEqual(m.sink.result, { ok: true, value: { search: detail } });
});

test('search: a stop stores what had arrived, the part cut short as stopped', () => {
  const m = search();
  m.tell({ t: 'start' });
  m.tell({ t: 'search_done', outcome: { ok: true, value: found } });
  m.tell({ t: 'stop', message: 'stopped by request' });
  m.tell({ t: 'answer_done', outcome: { ok: false, error: 'This operation was aborted' } });
  const [save] = m.sent('save');
  assert.deepEqual(save && [save.row.requestId, save.row.answerError], ['r1', SEARCH_RUN_STOPPED]);
  m.tell({ t: 'saved', detail });
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'stopped', message: SEARCH_RUN_STOPPED });
});

test('search: the half a stop cuts short streams the error it is stored with; an engine error before the stop keeps its words', () => {
  const m = search();
  m.tell({ t: 'start' });
  m.tell({ t: 'answer_done', outcome: { ok: false, error: 'engine 500' } });
  m.tell({ t: 'stop', message: 'stopped by request' });
  m.tell({ t: 'search_done', outcome: { ok: false, error: 'engine_a /search was aborted' } });
  assert.deepEqual(m.sink.events(), [
    ['answer_error', { error: 'engine 500' }],
    ['search_error', { error: SEARCH_RUN_STOPPED }],
  ]);
  const [save] = m.sent('save');
  assert.deepEqual(save && [save.row.error, save.row.answerError], [SEARCH_RUN_STOPPED, 'engine 500'], 'stored as streamed');
  m.tell({ t: 'saved', detail });
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'stopped', message: SEARCH_RUN_STOPPED });
});

test('search: a shutdown stores what had arrived as a stop does, and ends with the cancel\'s message', () => {
  const m = search();
  m.tell({ t: 'start' });
  m.tell({ t: 'answer_done', outcome: { ok: true, value: answer } });
  m.tell({ t: 'cancel', why: 'shutdown', message: SHUTDOWN });
  m.tell({ t: 'search_done', outcome: { ok: false, error: 'This operation was aborted' } });
  assert.deepEqual(m.sink.events().at(-1), ['search_error', { error: SEARCH_RUN_STOPPED }], 'streamed as it is stored');
  const [save] = m.sent('save');
  assert.deepEqual(save && [save.row.error, save.row.answerText], [SEARCH_RUN_STOPPED, 'A']);
  m.tell({ t: 'saved', detail });
  assert.deepEqual(m.sink.events().at(-1), ['error', { message: SHUTDOWN }]);
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'cancelled', message: SHUTDOWN });
});

test('search: a disconnect stores nothing; a failed store and a deleted search end with their errors', () => {
  const gone = search();
  gone.tell({ t: 'start' });
  gone.tell({ t: 'cancel', why: 'disconnect', message: 'the client disconnected' });
  gone.tell({ t: 'search_done', outcome: { ok: false, error: 'aborted' } });
  gone.tell({ t: 'answer_done', outcome: { ok: false, error: 'aborted' } });
  assert.equal(gone.sent('save').length, 0);
  assert.deepEqual(gone.sink.result, { ok: false, outcome: 'cancelled', message: 'search run cancelled: the client disconnected' });

  const broken = search();
  broken.tell({ t: 'start' });
  broken.tell({ t: 'search_done', outcome: { ok: true, value: found } });
  broken.tell({ t: 'answer_done', outcome: { ok: true, value: answer } });
  broken.tell({ t: 'save_failed', error: new Error('connection refused') });
  assert.deepEqual(broken.sink.result, { ok: false, outcome: 'internal', message: 'search run could not be stored: connection refused' });

  const deleted = search();
  deleted.tell({ t: 'start' });
  deleted.tell({ t: 'search_done', outcome: { ok: false, error: 'e1' } });
  deleted.tell({ t: 'answer_done', outcome: { ok: false, error: 'e2' } });
  deleted.tell({ t: 'saved', detail: null });
  assert.deepEqual(deleted.sink.result, { ok: false, outcome: 'not_found', message: 'search not found' });
  assert.equal(deleted.sink.ends, 1);
});

test('search: the save carries the run\'s mark; a save refused by it ends the run as cancelled', () => {
  const m = search();
  const mark = { instanceId: 'i1', startedAt: '2026-11-28 14:00:00.123456+00' };
  m.tell({ t: 'start' });
  m.tell({ t: 'search_done', outcome: { ok: true, value: found }, mark });
  m.tell({ t: 'answer_done', outcome: { ok: true, value: answer } });
  const [save] = m.sent('save');
  assert.deepEqual(save?.mark, mark);
  m.tell({ t: 'save_failed', error: new SearchRunFencedError('search-1') });
  const result = m.sink.result as { ok: boolean; outcome: string; message: string };
  assert.deepEqual([result.ok, result.outcome], [false, 'cancelled']);
  assert.match(result.message, /no longer marked as this run's/);

  const unmarked = search();
  unmarked.tell({ t: 'start' });
  unmarked.tell({ t: 'search_done', outcome: { ok: true, value: found } });
  unmarked.tell({ t: 'answer_done', outcome: { ok: true, value: answer } });
  assert.equal(unmarked.sent('save')[0]?.mark, null, 'a run whose mark was not taken saves as unmarked');
});

test('search: an engine outcome twice, or a store outcome while running, is unexpected', () => {
  const m = search();
  m.tell({ t: 'start' });
  m.tell({ t: 'search_done', outcome: { ok: true, value: found } });
  m.tell({ t: 'search_done', outcome: { ok: false, error: 'again' } });
  m.tell({ t: 'saved', detail });
  assert.deepEqual(m.sink.names(), ['search_results'], 'neither changed the run');
  assert.deepEqual(m.unexpected.splice(0), ["'search_done' in state 'running'", "'saved' in state 'running'"]);
});

const title = () => machine(titleBehavior, { owner: ADMIN_USER_ID, chatId: 'chat-1', content: 'how do tides work?' }, fakeDeps());
const chat = { id: 'chat-1', title: 'Tides' } as ChatSummary;
const untitled = { id: 'chat-1', title: null } as ChatSummary;

test('title: chat read, LlmCall opened, model called, reply cleaned, call closed, title set only then', () => {
  const m = title();
  m.tell({ t: 'start' });
  assert.deepEqual(
    m.commands.map((c) => c.c),
    ['read_chat'],
  );
  m.tell({ t: 'chat_read', chat: untitled });
  assert.deepEqual(
    m.commands.map((c) => c.c),
    ['read_chat', 'start_call'],
  );
  m.tell({ t: 'call_started', callId: 'llm-t' });
  assert.equal(m.sent('generate')[0]?.model, 'title-model');
  m.tell({ t: 'generated', text: '"Tides."\nmore', usage: null });
  assert.deepEqual(
    m.sent('finish_call').map((c) => c.callId),
    ['llm-t'],
  );
  assert.equal(m.sent('set_title').length, 0, 'the title waits for the call to be recorded');
  m.tell({ t: 'call_finished' });
  assert.deepEqual(
    m.sent('set_title').map((c) => c.title),
    ['Tides'],
  );
  m.tell({ t: 'titled', chat });
  assert.deepEqual(m.sink.events(), [['done', { chat }]]);
  assert.equal(m.timers.pending.size, 0, 'the timeout timer goes with the run');
});

test('title: a chat titled before the run read it ends with that title, without a model call', () => {
  // The route read it untitled; an earlier suggestion stored its title before this run started.
  const m = title();
  m.tell({ t: 'start' });
  m.tell({ t: 'chat_read', chat });
  assert.deepEqual(m.commands.map((c) => c.c), ['read_chat']);
  assert.deepEqual(m.sink.result, { ok: true, value: { chat } });
  assert.equal(m.timers.pending.size, 0, 'the timeout timer goes with the run');

  const gone = title();
  gone.tell({ t: 'start' });
  gone.tell({ t: 'chat_read', chat: null });
  assert.deepEqual(gone.sink.result, { ok: false, outcome: 'not_found', message: 'chat not found' });

  // Deleted after the read, before the LlmCall's row: the same 404, not the database's words.
  const late = title();
  late.tell({ t: 'start' });
  late.tell({ t: 'chat_read', chat: untitled });
  late.tell({ t: 'failed', error: new ChatGoneError('chat-1') });
  assert.deepEqual(late.sink.result, { ok: false, outcome: 'not_found', message: 'chat not found' });
});

test('title: the timeout fails the model call as provider_timeout and marks the LlmCall failed', () => {
  const m = title();
  m.tell({ t: 'start' });
  m.tell({ t: 'chat_read', chat: untitled });
  m.tell({ t: 'call_started', callId: 'llm-t' });
  assert.equal(m.timers.fire(TITLE_TIMEOUT_MS), 1);
  assert.ok(m.sent('generate')[0]?.signal.aborted, 'the model call sees the timeout');
  m.tell({ t: 'failed', error: new Error('This operation was aborted') });
  const message = `title generation failed: timed out after ${TITLE_TIMEOUT_MS} ms`;
  assert.deepEqual(
    m.sent('fail_call').map((c) => c.error),
    [message],
  );
  m.tell({ t: 'call_failed' });
  assert.deepEqual(m.sink.result, { ok: false, outcome: 'provider_timeout', message });
});

test('title: a shutdown ends the run with the cancel\'s message; an empty reply is a provider error', () => {
  const cut = title();
  cut.tell({ t: 'start' });
  cut.tell({ t: 'chat_read', chat: untitled });
  cut.tell({ t: 'call_started', callId: 'llm-t' });
  cut.tell({ t: 'cancel', why: 'shutdown', message: SHUTDOWN });
  cut.tell({ t: 'failed', error: new Error('This operation was aborted') });
  cut.tell({ t: 'call_failed' });
  assert.deepEqual(cut.sink.events(), [['error', { message: SHUTDOWN }]]);
  assert.deepEqual(cut.sink.result, { ok: false, outcome: 'cancelled', message: SHUTDOWN });

  const empty = title();
  empty.tell({ t: 'start' });
  empty.tell({ t: 'chat_read', chat: untitled });
  empty.tell({ t: 'call_started', callId: 'llm-t' });
  empty.tell({ t: 'generated', text: '""', usage: null });
  empty.tell({ t: 'call_failed' });
  assert.deepEqual(empty.sink.result, { ok: false, outcome: 'provider_error', message: 'title generation failed: title-model returned no usable title' });
});
