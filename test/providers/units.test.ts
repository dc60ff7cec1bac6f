// Pure mapping checks that need no simulator: error mapping, attachment parts, role merging, model filter.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { A, O } from '../../src/providers/sdks.ts';
import { chatParts, messagesBlocks, responsesParts, textAttachmentBlock } from '../../src/providers/attachments.ts';
import { ProviderAbortError, isAbortError, toProviderError } from '../../src/providers/errors.ts';
import { providerKeyVariable, createProviders } from '../../src/providers/index.ts';
import { isResponsesModel } from '../../src/providers/provider-a.ts';
import { toMessagesParams } from '../../src/providers/provider-b.ts';
import { openaiFrames, SseFrames } from '../../src/providers/sse.ts';
import { ProviderError } from '../../src/providers/types.ts';
import type { ImageAttachment, TextAttachment } from '../../src/base/types.ts';

const image: ImageAttachment = {
  kind: 'image', id: 'a1', filename: 'dot.png', mimeType: 'image/png', sizeBytes: 4, dataUrl: 'data:image/png;base64,iVBORw0K',
};
const doc: TextAttachment = {
  kind: 'text', id: 'a2', filename: 'notes.md', mimeType: 'text/markdown', sizeBytes: 5, text: 'hello', truncated: false,
};

test('HTTP errors keep the status and the provider message', () => {
  const headers = new Headers();
  const o = O.APIError.generate(429, { error: { message: 'slow down', type: 'requests', code: 'rate_limit_exceeded' } }, undefined, headers);
  const e = toProviderError('provider_a', o);
  assert.ok(e instanceof ProviderError);
  assert.equal(e.status, 429);
  assert.equal(e.message, 'provider_a error 429: slow down');

  const a = A.APIError.generate(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, undefined, headers);
  const eb = toProviderError('provider_b', a);
  assert.equal(eb.status, 529);
  assert.equal(eb.message, 'provider_b error 529: Overloaded');

  const plain = O.APIError.generate(502, undefined, 'Bad Gateway', headers);
  assert.equal(toProviderError('provider_c', plain).message, 'provider_c error 502: Bad Gateway');
});

test('in-stream errors, connection failures and timeouts read clearly', () => {
  const inStream = new O.APIError(undefined, { message: 'boom', type: 'server_error', code: 'server_error' }, undefined, undefined);
  const e = toProviderError('provider_c', inStream);
  assert.equal(e.status, undefined);
  assert.equal(e.message, 'provider_c stream error (server_error): boom');

  const anth = new A.APIError(undefined, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, undefined, undefined);
  assert.equal(toProviderError('provider_b', anth).message, 'provider_b stream error (overloaded_error): Overloaded');

  assert.equal(toProviderError('provider_a', new O.APIConnectionTimeoutError()).message, 'provider_a request timed out');
  const conn = new A.APIConnectionError({ cause: new Error('ECONNREFUSED') });
  assert.equal(toProviderError('provider_b', conn).message, 'provider_b connection failed: ECONNREFUSED');
  assert.equal(toProviderError('provider_d', new TypeError('terminated')).message, 'provider_d stream interrupted: terminated');
});

test('aborts stay recognisable as aborts', () => {
  for (const err of [new O.APIUserAbortError(), new A.APIUserAbortError(), new DOMException('x', 'AbortError')]) {
    const e = toProviderError('provider_a', err);
    assert.ok(e instanceof ProviderAbortError);
    assert.ok(e instanceof ProviderError);
    assert.ok(isAbortError(e));
  }
  // Whatever broke, an aborted signal means the caller cancelled.
  const ac = new AbortController();
  ac.abort();
  assert.ok(isAbortError(toProviderError('provider_b', new TypeError('terminated'), ac.signal)));
  assert.ok(!isAbortError(toProviderError('provider_b', new TypeError('terminated'))));
});

test('attachment parts per provider', () => {
  assert.deepEqual(responsesParts('hi', [image, doc]), [
    { type: 'input_text', text: 'hi' },
    { type: 'input_image', image_url: image.dataUrl, detail: 'auto' },
    { type: 'input_text', text: 'Attached file notes.md (text/markdown):\nhello' },
  ]);
  assert.deepEqual(chatParts('hi', [image, doc]), [
    { type: 'text', text: 'hi' },
    { type: 'image_url', image_url: { url: image.dataUrl, detail: 'auto' } },
    { type: 'text', text: 'Attached file notes.md (text/markdown):\nhello' },
  ]);
  assert.deepEqual(messagesBlocks('hi', [image, doc]), [
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
    { type: 'text', text: 'Attached file notes.md (text/markdown):\nhello' },
    { type: 'text', text: 'hi' },
  ]);
  assert.match(textAttachmentBlock({ ...doc, truncated: true }), /truncated/);
});

test('provider_b merges same-role runs, turns tool messages into user text, lifts system', () => {
  const { system, messages } = toMessagesParams([
    { role: 'system', content: 'S1' },
    { role: 'user', content: 'u1' },
    { role: 'user', content: 'u2', attachments: [image] },
    { role: 'assistant', content: 'a1', attachments: [doc] },
    { role: 'tool', content: 'result', name: 'web_search' },
    { role: 'system', content: 'S2' },
    { role: 'user', content: 'u3' },
  ]);
  assert.equal(system, 'S1\n\nS2');
  assert.deepEqual(messages.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.deepEqual(messages[0]!.content, [
    { type: 'text', text: 'u1' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } },
    { type: 'text', text: 'u2' },
  ]);
  // Attachments on non-user messages are ignored (spec rule 6).
  assert.deepEqual(messages[1]!.content, [{ type: 'text', text: 'a1' }]);
  assert.deepEqual(messages[2]!.content, [
    { type: 'text', text: 'Tool result (web_search):\nresult' },
    { type: 'text', text: 'u3' },
  ]);
});

test('provider_a model filter keeps Responses-capable models only', () => {
  for (const id of ['gpt-4.1', 'gpt-4o-mini', 'o3', 'o4-mini', 'gpt-5', 'codex-mini-latest', 'chatgpt-4o-latest']) {
    assert.ok(isResponsesModel(id), id);
  }
  for (const id of [
    'text-embedding-3-small', 'whisper-1', 'tts-1', 'gpt-4o-mini-tts', 'gpt-4o-audio-preview', 'gpt-4o-realtime-preview',
    'gpt-4o-transcribe', 'dall-e-3', 'gpt-image-1', 'omni-moderation-latest', 'babbage-002', 'davinci-002',
    'gpt-3.5-turbo-instruct', 'gpt-4o-search-preview', 'sora-2',
  ]) {
    assert.ok(!isResponsesModel(id), id);
  }
});

test('createProviders builds only providers with a key', () => {
  const base = { PROVIDER_TIMEOUT_MS: 5000, AGENT_PROVIDER_API_BASE_URL: 'http://127.0.0.1:8642/v1' } as const;
  assert.deepEqual([...createProviders({ ...base }).keys()], []);
  const all = createProviders({
    ...base, PROVIDER_A_API_KEY: 'a', PROVIDER_B_API_KEY: 'b', PROVIDER_C_API_KEY: 'c', AGENT_PROVIDER_API_KEY: 'd',
  });
  assert.deepEqual([...all.keys()].sort(), ['provider_a', 'provider_b', 'provider_c', 'provider_d']);
  for (const [name, adapter] of all) assert.equal(adapter.name, name);
  assert.equal(providerKeyVariable('provider_c'), 'PROVIDER_C_API_KEY');
  assert.equal(providerKeyVariable('provider_d'), 'AGENT_PROVIDER_API_KEY');
});

test('an SSE body decodes a character split across socket reads, byte by byte', () => {
  const text = 'é😀 ünï';
  const bytes = Buffer.from(`data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\ndata: [DONE]\n\n`);
  const sse = new SseFrames(new Headers(), openaiFrames);
  const frames: unknown[] = [];
  for (let i = 0; i < bytes.length; i++) frames.push(...sse.feed(bytes.subarray(i, i + 1)));
  assert.deepEqual(frames, [{ choices: [{ delta: { content: text } }] }]);
  assert.equal(sse.done, true);
});

// The Messages API answers 400 `text content blocks must contain non-whitespace text`: a model's answer of
// only blank lines, once stored, made every later provider_b turn of that chat fail.
test('provider_b leaves out whitespace-only text, and a message left with nothing', () => {
  const { messages } = toMessagesParams([
    { role: 'user', content: 'u1' },
    { role: 'assistant', content: '\n\n' },
    { role: 'user', content: ' \t', attachments: [image] },
    { role: 'assistant', content: 'a1' },
    { role: 'user', content: 'u2' },
  ]);
  assert.deepEqual(messages, [
    { role: 'user', content: [{ type: 'text', text: 'u1' }, { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0K' } }] },
    { role: 'assistant', content: [{ type: 'text', text: 'a1' }] },
    { role: 'user', content: [{ type: 'text', text: 'u2' }] },
  ]);
});

// A trailing assistant turn is one the model continues (a prefill); the Messages API answers 400 `final
// assistant content cannot end with trailing whitespace` to one that does (wire-formats §8).
test('provider_b trims the trailing whitespace of a final assistant turn, and only of that one', () => {
  const { messages } = toMessagesParams([
    { role: 'user', content: 'u1' },
    { role: 'assistant', content: 'kept as is \n' },
    { role: 'user', content: 'u2 ' },
    { role: 'assistant', content: 'The answer is \n' },
  ]);
  assert.deepEqual(messages.map((m) => (m.content as { text: string }[]).map((b) => b.text)), [['u1'], ['kept as is \n'], ['u2 '], ['The answer is']]);
});

// Deep research models answer 400 without a web_search_preview, mcp or file_search tool, and
// computer-use-preview without the computer tool: the service sends none of those, so every call failed.
test('provider_a model filter leaves out models that need a built-in tool the service never sends', () => {
  for (const id of ['o3-deep-research', 'o3-deep-research-2025-06-26', 'o4-mini-deep-research', 'computer-use-preview', 'computer-use-preview-2025-03-11']) {
    assert.ok(!isResponsesModel(id), id);
  }
  for (const id of ['o3', 'o3-pro', 'gpt-5-mini']) assert.ok(isResponsesModel(id), id);
});
