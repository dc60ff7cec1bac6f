// A run's frames as the Responses API's objects and events (wire-formats.md §1). The events are a function
// of the run's frames alone (its `meta`, each delta as it was, its end), numbered from 0: a reader that
// attaches late (the run's replay keeps each delta: ChatRunRequest.keepDeltas) or reads after the end (the
// stored text cut at the stored delta lengths) gets the very events, under the same numbers, that a reader
// from the start got. `starting_after` only decides which of them are written.
import type { SseSink } from '../http/sse.ts';
import type { ToolCallRequest, Usage } from '../providers/types.ts';
import { responseErrorEvent } from './errors.ts';
import { FrameTranslator } from './native-frames.ts';
import type { ResponseRequest, ResponseStatus, StoredResponse } from './store.ts';

/** What every object of one response repeats. */
export interface ResponseBase {
  id: string;
  createdAt: number;
  request: ResponseRequest;
  previousResponseId: string | null;
  store: boolean;
  chatId: string | null;
}

export interface ResponseEnd {
  status: Exclude<ResponseStatus, 'queued' | 'in_progress'>;
  text: string;
  toolCalls: ToolCallRequest[] | null;
  usage: Usage | null;
  error: string | null;
}

const suffix = (id: string) => id.slice('resp_'.length);
export const messageItemId = (id: string) => `msg_${suffix(id)}`;
const callItemId = (id: string, i: number) => `fc_${i}_${suffix(id)}`;

const textPart = (text: string) => ({ type: 'output_text', text, annotations: [], logprobs: [] });

export function messageItem(id: string, text: string, status: 'in_progress' | 'completed'): Record<string, unknown> {
  return { id: messageItemId(id), type: 'message', status, role: 'assistant', content: status === 'completed' ? [textPart(text)] : [] };
}

export function callItem(id: string, i: number, c: ToolCallRequest, status: 'in_progress' | 'completed'): Record<string, unknown> {
  return { id: callItemId(id, i), type: 'function_call', status, call_id: c.callId, name: c.name, arguments: status === 'completed' ? c.arguments : '' };
}

/** The output of an ended response: its text as a message (unless it only called functions), then its calls. */
export function outputOf(id: string, end: Pick<ResponseEnd, 'text' | 'toolCalls'>): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (end.text !== '' || !end.toolCalls) out.push(messageItem(id, end.text, 'completed'));
  end.toolCalls?.forEach((c, i) => out.push(callItem(id, i, c, 'completed')));
  return out;
}

export const responseUsage = (u: Usage | null) =>
  u && { input_tokens: u.inputTokens, input_tokens_details: { cached_tokens: 0 }, output_tokens: u.outputTokens, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: u.totalTokens };

/** The response object; `end` absent: in progress (or `queued`: its run not started yet), no output yet. */
export function responseObject(base: ResponseBase, end: ResponseEnd | null, queued = false): Record<string, unknown> {
  const r = base.request;
  const status: ResponseStatus = end ? end.status : queued ? 'queued' : 'in_progress';
  const out: Record<string, unknown> = {
    id: base.id,
    object: 'response',
    created_at: base.createdAt,
    status,
    background: r.background,
    error: end?.error ? { code: 'server_error', message: end.error } : null,
    incomplete_details: status === 'cancelled' ? { reason: 'cancelled' } : null,
    instructions: r.instructions,
    max_output_tokens: r.max_output_tokens,
    metadata: r.metadata ?? {},
    model: r.model,
    output: end ? outputOf(base.id, end) : [],
    parallel_tool_calls: true,
    previous_response_id: base.previousResponseId,
    store: base.store,
    temperature: r.temperature,
    text: { format: { type: 'text' } },
    tool_choice: r.tool_choice,
    tools: r.tools,
    top_p: r.top_p,
    truncation: 'disabled',
    usage: end ? responseUsage(end.usage) : null,
  };
  if (end && end.status === 'completed') out.output_text = end.text;
  if (base.chatId) out.chat_id = base.chatId;
  return out;
}

export const baseOfStored = (s: StoredResponse): ResponseBase => ({ id: s.id, createdAt: s.createdAt, request: s.request, previousResponseId: s.previousResponseId, store: true, chatId: s.chatId });

export function endOfStored(s: StoredResponse): ResponseEnd | null {
  if (s.status === 'queued' || s.status === 'in_progress') return null;
  return { status: s.status, text: s.outputText ?? '', toolCalls: s.toolCalls, usage: s.usage, error: s.error };
}

/** A stored response's object as it stands. */
export const storedObject = (s: StoredResponse): Record<string, unknown> => responseObject(baseOfStored(s), endOfStored(s), s.status === 'queued');

/** A run's `done` or `error` frame as the response's end. */
export function endOfFrame(f: { event: string; data: Record<string, unknown> }): ResponseEnd {
  if (f.event === 'error') return { status: 'failed', text: '', toolCalls: null, usage: null, error: String(f.data.message) };
  return {
    status: f.data.stopped === true ? 'cancelled' : 'completed',
    text: String(f.data.text ?? ''),
    toolCalls: (f.data.toolCalls as ToolCallRequest[] | undefined) ?? null,
    usage: (f.data.usage as Usage | undefined) ?? null,
    error: null,
  };
}

/** The response's events on an SSE response: those numbered after `startingAfter` are written. */
export class ResponseEventStream extends FrameTranslator {
  private seq = 0;
  private textOpen = false;
  /**
   * Set by the stream that started the response: its last events wait for its end to be stored, so that
   * a client that read `response.completed` finds the response ended (GET, previous_response_id).
   */
  private stored: Promise<unknown> | null = null;
  private held = false;
  /**
   * The text so far is not cut as it was streamed: a takeover's continuation (past its first
   * `resumedDeltas`: the checkpoint's text beyond the cuts it kept, then new text) or an end read from the
   * LlmCall. A reader that had deltas past those cannot resume exactly.
   */
  private recut = false;
  /** Of a takeover's continuation: its first deltas that are the lost run's own, cut as it streamed them. */
  private resumedDeltas = 0;
  /** Ended early (resume_point_lost): later frames are dropped. */
  private cut = false;
  private readonly itemId: string;
  private readonly deltaHead: string;

  /** `callId`: the response's own LlmCall; a run under another one is a takeover's continuation. */
  constructor(
    sink: SseSink,
    private readonly base: ResponseBase,
    private readonly startingAfter = -1,
    private readonly callId: string | null = null,
  ) {
    super(sink);
    this.itemId = messageItemId(base.id);
    this.deltaHead = `event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"${this.itemId}","output_index":0,"content_index":0,"logprobs":[],"delta":`;
  }

  /** The terminal events and the response's end wait for `stored` (see the field). */
  holdEndUntil(stored: Promise<unknown>): void {
    this.stored = stored;
  }

  override end(): void {
    if (!this.held) this.sink.end();
  }

  /** The events of a response that ended, from what was stored: its text cut as it was streamed. */
  replayStored(s: StoredResponse): void {
    const end = endOfStored(s)!;
    // Cut as a takeover's continuation streamed it: exact through the lost run's deltas it resumed, as live.
    this.recut = s.deltas === null || s.resumedDeltas !== null;
    this.resumedDeltas = s.deltas === null ? 0 : (s.resumedDeltas ?? 0);
    this.event('meta', {});
    let at = 0;
    for (const n of s.deltas ?? (end.text ? [end.text.length] : [])) this.delta(JSON.stringify(end.text.slice(at, (at += n))));
    if (this.cut) return;
    this.finish(end);
    this.sink.end();
  }

  private emit(type: string, fields: Record<string, unknown>): void {
    const n = this.seq++;
    if (n > this.startingAfter) this.sink.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: n, ...fields })}\n\n`);
  }

  delta(text: string): void {
    if (this.cut) return;
    if (!this.textOpen) {
      this.openText();
      if (this.recut && this.startingAfter >= this.seq + this.resumedDeltas) return this.resumePointLost();
    }
    const n = this.seq++;
    // The hot path: the delta's JSON literal spliced in, nothing parsed or built.
    if (n > this.startingAfter) this.sink.write(`${this.deltaHead}${text},"sequence_number":${n}}\n\n`);
  }

  event(event: string, data: Record<string, unknown>): void {
    if (this.cut) return;
    if (event === 'meta') {
      if (this.callId !== null && typeof data.callId === 'string' && data.callId !== this.callId) {
        this.recut = true;
        this.resumedDeltas = typeof data.resumedDeltas === 'number' ? data.resumedDeltas : 0;
      }
      const started = responseObject(this.base, null);
      this.emit('response.created', { response: started });
      this.emit('response.in_progress', { response: started });
    } else if (event === 'done' || event === 'error') {
      const end = endOfFrame({ event, data });
      if (!this.stored) return this.finish(end);
      this.held = true;
      const release = () => {
        this.finish(end);
        this.sink.end();
      };
      void this.stored.then(release, release);
    }
  }

  /**
   * The reader had text this stream cannot number as it was numbered then: it is told to read the response
   * again from the start, never given different text under the same numbers.
   */
  private resumePointLost(): void {
    this.cut = true;
    const message = `the response was continued after its instance was lost, and the events after sequence number ${this.startingAfter} cannot be replayed exactly: read it again from the start (without starting_after)`;
    // Numbered after what the reader has, as the next event it would have read.
    this.sink.write(responseErrorEvent(Math.max(this.seq, this.startingAfter + 1), 'resume_point_lost', message));
    this.sink.end();
  }

  private openText(): void {
    this.textOpen = true;
    this.emit('response.output_item.added', { output_index: 0, item: messageItem(this.base.id, '', 'in_progress') });
    this.emit('response.content_part.added', { item_id: this.itemId, output_index: 0, content_index: 0, part: textPart('') });
  }

  private finish(end: ResponseEnd): void {
    if (end.status !== 'failed') {
      let index = 0;
      if (this.textOpen || !end.toolCalls) {
        if (!this.textOpen) this.openText();
        this.emit('response.output_text.done', { item_id: this.itemId, output_index: 0, content_index: 0, text: end.text, logprobs: [] });
        this.emit('response.content_part.done', { item_id: this.itemId, output_index: 0, content_index: 0, part: textPart(end.text) });
        this.emit('response.output_item.done', { output_index: 0, item: messageItem(this.base.id, end.text, 'completed') });
        index = 1;
      }
      end.toolCalls?.forEach((c, i) => {
        const output_index = index + i;
        const item_id = callItemId(this.base.id, i);
        this.emit('response.output_item.added', { output_index, item: callItem(this.base.id, i, c, 'in_progress') });
        this.emit('response.function_call_arguments.delta', { item_id, output_index, delta: c.arguments });
        this.emit('response.function_call_arguments.done', { item_id, output_index, name: c.name, arguments: c.arguments });
        this.emit('response.output_item.done', { output_index, item: callItem(this.base.id, i, c, 'completed') });
      });
    }
    const response = responseObject(this.base, end);
    if (end.status === 'completed') this.emit('response.completed', { response });
    else if (end.status === 'failed') this.emit('response.failed', { response });
    else this.emit('response.incomplete', { response });
  }
}
