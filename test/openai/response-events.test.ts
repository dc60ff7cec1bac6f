// The Responses events as a function of a run's frames (src/openai/response-events.ts): a reader from any
// sequence number gets exactly the tail of a full read, live or from what was stored; and a reader past the
// first delta of a run whose text was recut (a takeover's continuation, an end read from the LlmCall) gets
// `resume_point_lost`, never different text under the same numbers. The sink records what it was given.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import OpenAI from 'openai';
import { Stream } from 'openai/streaming';
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';
import type { SseSink } from '../../src/http/sse.ts';
import { ResponseEventStream, type ResponseBase } from '../../src/openai/response-events.ts';
import type { StoredResponse } from '../../src/openai/store.ts';

const base: ResponseBase = {
  id: 'resp_abc',
  createdAt: 1_700_000_000,
  previousResponseId: null,
  store: true,
  chatId: 'chat-1',
  request: { model: 'provider_c/m', instructions: null, metadata: null, tools: [], tool_choice: 'auto', temperature: null, top_p: null, max_output_tokens: null, background: true },
};

function recordingSink() {
  let out = '';
  let ended = false;
  const raw = () => out;
  const sink = { dropped: false, write: (s: string) => void (out += s), end: () => void (ended = true), onClose: () => {} } as unknown as SseSink;
  const events = () =>
    out
      .split('\n\n')
      .filter((f) => f.startsWith('event: '))
      .map((f) => JSON.parse(f.slice(f.indexOf('\ndata: ') + 7)) as { type: string; sequence_number: number; code?: string; delta?: string });
  return { sink, events, ended: () => ended, raw };
}

const DELTAS = ['Hel', 'lo, ', 'wor', 'ld'];
const runFrames = (callId: string, resumedDeltas?: number) =>
  sseFrame('meta', { type: 'meta', chatId: 'chat-1', callId, provider: 'provider_c', model: 'm', ...(resumedDeltas !== undefined && { resumedDeltas }) }) +
  DELTAS.map(deltaFrame).join('') +
  sseFrame('done', { type: 'done', text: DELTAS.join(''), usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 } });

const stored = (deltas: number[] | null): StoredResponse => ({
  id: base.id, owner: 'admin', chatId: 'chat-1', callId: 'call-1', previousResponseId: null, status: 'completed', input: [], inherited: null, request: base.request,
  outputText: DELTAS.join(''), toolCalls: null, deltas, resumedDeltas: null, usage: { inputTokens: 3, outputTokens: 4, totalTokens: 7 }, error: null, createdAt: base.createdAt,
});

function live(startingAfter: number, callId = 'call-1', resumedDeltas?: number) {
  const r = recordingSink();
  const s = new ResponseEventStream(r.sink, base, startingAfter, 'call-1');
  s.write(runFrames(callId, resumedDeltas));
  s.end();
  return r;
}

describe('Responses events of a run', () => {
  it('a full read numbers every event once, created … completed, the deltas as they came', () => {
    const all = live(-1).events();
    assert.deepEqual(all.map((e) => e.sequence_number), all.map((_, i) => i));
    assert.equal(all[0]!.type, 'response.created');
    assert.equal(all.at(-1)!.type, 'response.completed');
    assert.deepEqual(all.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta), DELTAS);
  });

  it('from any N, live or stored, a reader gets exactly the tail of the full read', () => {
    const all = live(-1).events();
    for (let n = -1; n <= all.length; n++) {
      assert.deepEqual(live(n).events(), all.filter((e) => e.sequence_number > n), `live from ${n}`);
      const r = recordingSink();
      new ResponseEventStream(r.sink, base, n).replayStored(stored(DELTAS.map((d) => d.length)));
      assert.deepEqual(r.events(), all.filter((e) => e.sequence_number > n), `stored from ${n}`);
      assert.ok(r.ended());
    }
  });

  it('a recut text: exact up to its first delta, resume_point_lost past it', () => {
    const all = live(-1).events();
    const firstDelta = all.find((e) => e.type === 'response.output_text.delta')!.sequence_number;
    for (let n = -1; n < firstDelta; n++) {
      const events = live(n, 'call-2').events();
      assert.deepEqual(events.slice(0, firstDelta - n - 1), all.filter((e) => e.sequence_number > n && e.sequence_number < firstDelta), `before the text, from ${n}`);
      assert.ok(!events.some((e) => e.type === 'error'));
    }
    for (const n of [firstDelta, firstDelta + 2, all.length - 2]) {
      for (const r of [live(n, 'call-2'), (() => { const x = recordingSink(); new ResponseEventStream(x.sink, base, n).replayStored(stored(null)); return x; })()]) {
        const events = r.events();
        assert.deepEqual(events.map((e) => [e.type, e.code]), [['error', 'resume_point_lost']], `from ${n}`);
        assert.ok(r.ended());
      }
    }
  });

  it('a takeover’s continuation: exact through the deltas it resumed as they were cut, resume_point_lost past them', () => {
    const all = live(-1).events();
    const firstDelta = all.find((e) => e.type === 'response.output_text.delta')!.sequence_number;
    // The continuation streams the same text; its first two deltas are the lost run's own (meta.resumedDeltas).
    // After its end, from what was stored (its cuts, and how many of them are the lost run's): the same.
    const afterEnd = (n: number) => {
      const r = recordingSink();
      new ResponseEventStream(r.sink, base, n).replayStored({ ...stored(DELTAS.map((d) => d.length)), resumedDeltas: 2 });
      return r.events();
    };
    for (let n = -1; n < firstDelta + 2; n++) {
      assert.deepEqual(live(n, 'call-2', 2).events(), all.filter((e) => e.sequence_number > n), `from ${n}`);
      assert.deepEqual(afterEnd(n), all.filter((e) => e.sequence_number > n), `after the end, from ${n}`);
    }
    for (const n of [firstDelta + 2, all.length - 2]) {
      assert.deepEqual(live(n, 'call-2', 2).events().map((e) => [e.type, e.code]), [['error', 'resume_point_lost']], `from ${n}`);
      assert.deepEqual(afterEnd(n).map((e) => [e.type, e.code]), [['error', 'resume_point_lost']], `after the end, from ${n}`);
    }
  });
});

describe('the in-stream error event', () => {
  const lost = () => {
    const r = recordingSink();
    new ResponseEventStream(r.sink, base, 5).replayStored(stored(null));
    return r;
  };

  it('carries code, message and param on the event (the SDK\'s ResponseErrorEvent) and nested under error (as OpenAI sends it)', () => {
    const [ev] = lost().events() as unknown as Record<string, unknown>[];
    const { error, ...flat } = ev!;
    assert.deepEqual(Object.keys(flat).sort(), ['code', 'message', 'param', 'sequence_number', 'type']);
    assert.deepEqual([flat.type, flat.code, flat.param, flat.sequence_number], ['error', 'resume_point_lost', null, 6]);
    assert.match(String(flat.message), /read it again from the start/);
    assert.deepEqual(error, { type: 'invalid_request_error', code: 'resume_point_lost', message: flat.message, param: null });
  });

  it('the official SDK throws it as an APIError with our message and code', async () => {
    const body = lost().raw();
    const stream = Stream.fromSSEResponse<OpenAI.Responses.ResponseStreamEvent>(new Response(body, { headers: { 'content-type': 'text/event-stream' } }), new AbortController());
    await assert.rejects(
      async () => {
        for await (const _ of stream);
      },
      (err: unknown) => err instanceof OpenAI.APIError && err.status === undefined && err.code === 'resume_point_lost' && /after sequence number 5 cannot be replayed exactly/.test(err.message),
    );
  });
});
