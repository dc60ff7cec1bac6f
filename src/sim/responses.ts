// provider_a: the Responses-style API (POST /responses), streaming and not, with reasoning +
// function-call rounds and stored responses for previous_response_id.
import { callFailure, resetConnection, streamDirective } from './faults.ts';
import { openaiError, openaiNotFound, openaiPreamble, openaiScriptedMessage } from './errors.ts';
import { isObject, newId, sendJson, unixNow } from './http.ts';
import { beforeStatus } from './gates.ts';
import { readResponsesRequest, type ResponsesInput } from './responses-input.ts';
import { argFragments, fullText, plan, type Plan, type Turn } from './script.ts';
import { frame, sendFrames, startStream, planned } from './sse.ts';
import type { Ctx } from './state.ts';

const MID_STREAM_MESSAGE = 'The server had an error while processing your request (simulated mid-stream failure).';

export async function handleResponses(ctx: Ctx): Promise<void> {
  if (ctx.path !== '/responses' || ctx.req.method !== 'POST') return openaiNotFound(ctx, '/v1');
  if (!openaiPreamble(ctx)) return;
  const input = readResponsesRequest(ctx.body, ctx.state);
  if (input.invalid) {
    return openaiError(ctx.res, 400, { message: input.message, param: input.param, code: input.code });
  }
  const p = plan({ system: input.system, turns: input.turns }, ctx.state.defaultReply);
  const d = p.directive;
  if (!(await beforeStatus(ctx.res, ctx.state.gates, d))) return;
  const f = callFailure(ctx.state.faults, ctx, d);
  if (f?.kind === 'reset') return resetConnection(ctx.res);
  if (f?.kind === 'status') return openaiError(ctx.res, f.status, { message: openaiScriptedMessage(f.status) }, f.headers);
  new ResponseRun(ctx, input, { ...p, directive: streamDirective(d, f) }).run();
}

type Item = Record<string, unknown>;

class ResponseRun {
  readonly hex = newId('');
  readonly id = `resp_${this.hex}`;
  readonly created = unixNow();
  readonly requestId = newId('req_');
  seq = 0;

  constructor(
    readonly ctx: Ctx,
    readonly input: ResponsesInput,
    readonly p: Plan,
  ) {}

  run(): void {
    const { p, input } = this;
    if (p.calls) return input.stream ? this.streamCalls() : this.reply(this.callItems());
    if (!input.stream) return this.replyText();
    this.streamText();
  }

  /** The response object; fields the request set are echoed back as the real API does. */
  response(status: string, output: Item[], usage: boolean, extra: Item = {}): Item {
    const b = this.ctx.body as Item;
    return {
      id: this.id,
      object: 'response',
      created_at: this.created,
      status,
      background: false,
      error: null,
      incomplete_details: null,
      instructions: b.instructions ?? null,
      max_output_tokens: b.max_output_tokens ?? null,
      model: this.input.model,
      output,
      parallel_tool_calls: b.parallel_tool_calls ?? true,
      previous_response_id: this.input.previousResponseId,
      reasoning: { effort: null, summary: null },
      service_tier: 'default',
      store: this.input.store,
      temperature: b.temperature ?? 1,
      text: { format: { type: 'text' }, verbosity: 'medium' },
      tool_choice: b.tool_choice ?? 'auto',
      tools: Array.isArray(b.tools) ? b.tools : [],
      top_p: b.top_p ?? 1,
      truncation: 'disabled',
      usage: usage && this.p.directive.noUsage !== true ? this.usage() : null,
      user: null,
      metadata: isObject(b.metadata) ? b.metadata : {},
      ...extra,
    };
  }

  usage(): Item {
    const { inputTokens, outputTokens, cachedTokens } = this.p;
    return {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: cachedTokens },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    };
  }

  callItems(): Item[] {
    const items: Item[] = [{ id: `rs_${this.hex}`, type: 'reasoning', summary: [] }];
    this.p.calls!.forEach((c, k) =>
      items.push({
        id: `fc_${this.hex}_${k}`,
        type: 'function_call',
        status: 'completed',
        arguments: c.arguments,
        call_id: `call_${this.hex}_${k}`,
        name: c.name,
      }),
    );
    return items;
  }

  messageItem(text: string, status = 'completed'): Item {
    return {
      id: `msg_${this.hex}`,
      type: 'message',
      status,
      content: [{ type: 'output_text', annotations: [], logprobs: [], text }],
      role: 'assistant',
    };
  }

  ev(type: string, fields: Item): string {
    return frame(type, { type, sequence_number: this.seq++, ...fields });
  }

  /** Stores the finished response so previous_response_id can chain from it. */
  store(response: Item, outputTurns: Turn[], pendingCalls: string[]): void {
    if (!this.input.store) return;
    this.ctx.state.responses.set(this.id, {
      turns: [...this.input.turns, ...outputTurns],
      pendingCalls,
      system: this.input.inheritedSystem,
      response,
    });
  }

  storeCalls(response: Item): void {
    const ids = this.p.calls!.map((_, k) => `call_${this.hex}_${k}`);
    this.store(response, [{ kind: 'calls', callIds: ids }], ids);
  }

  headers(): Record<string, string> {
    return { 'x-request-id': this.requestId, 'openai-processing-ms': '1' };
  }

  reply(output: Item[]): void {
    const r = this.response('completed', output, true);
    this.storeCalls(r);
    sendJson(this.ctx.res, 200, r, this.headers());
  }

  replyText(): void {
    const { p, ctx } = this;
    const fa = p.directive.failAfter;
    if (fa !== undefined) {
      // Non-streaming has no stream to break: the scripted failure becomes the whole answer.
      const mode = p.directive.failMode ?? 'event';
      if (mode === 'disconnect') return void ctx.res.socket?.destroy();
      if (mode === 'event') return openaiError(ctx.res, 500, { message: MID_STREAM_MESSAGE });
      const r = this.response('failed', [], false, { error: { code: 'server_error', message: MID_STREAM_MESSAGE } });
      return sendJson(ctx.res, 200, r, this.headers());
    }
    const text = fullText(p.deltas);
    const r = this.response('completed', [this.messageItem(text)], true);
    this.store(r, [{ kind: 'assistant', text }], []);
    sendJson(ctx.res, 200, r, this.headers());
  }

  streamCalls(): void {
    const items = this.callItems();
    let out = this.ev('response.created', { response: this.response('in_progress', [], false) });
    out += this.ev('response.in_progress', { response: this.response('in_progress', [], false) });
    items.forEach((item, index) => {
      if (item.type === 'reasoning') {
        out += this.ev('response.output_item.added', { output_index: index, item });
        out += this.ev('response.output_item.done', { output_index: index, item });
        return;
      }
      const item_id = item.id;
      const args = item.arguments as string;
      out += this.ev('response.output_item.added', {
        output_index: index,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      for (const delta of argFragments(args)) {
        out += this.ev('response.function_call_arguments.delta', { item_id, output_index: index, delta });
      }
      out += this.ev('response.function_call_arguments.done', { item_id, output_index: index, name: item.name, arguments: args });
      out += this.ev('response.output_item.done', { output_index: index, item });
    });
    const r = this.response('completed', items, true);
    out += this.ev('response.completed', { response: r });
    this.storeCalls(r);
    sendFrames(this.ctx.res, out, this.headers());
  }

  streamText(): void {
    const { p } = this;
    const msgId = `msg_${this.hex}`;
    const inProgress = this.response('in_progress', [], false);
    let head = this.ev('response.created', { response: inProgress });
    head += this.ev('response.in_progress', { response: inProgress });
    head += this.ev('response.output_item.added', {
      output_index: 0,
      item: { id: msgId, type: 'message', status: 'in_progress', content: [], role: 'assistant' },
    });
    const loc = { item_id: msgId, output_index: 0, content_index: 0 };
    head += this.ev('response.content_part.added', {
      ...loc,
      part: { type: 'output_text', annotations: [], logprobs: [], text: '' },
    });
    const base = this.seq;
    // Delta frames are the hot path: fixed pieces around the two values that change.
    const pre = 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":';
    const mid = `,"item_id":"${msgId}","output_index":0,"content_index":0,"delta":`;
    const post = ',"logprobs":[]}\n\n';
    startStream(
      {
        ...planned(this.ctx, p),
        head,
        delta: (i, t) => pre + (base + i) + mid + JSON.stringify(t) + post,
        tail: (text) => {
          this.seq = base + p.deltas.count;
          const part = { type: 'output_text', annotations: [], logprobs: [], text };
          let out = this.ev('response.output_text.done', { ...loc, text, logprobs: [] });
          out += this.ev('response.content_part.done', { ...loc, part });
          const item = this.messageItem(text);
          out += this.ev('response.output_item.done', { output_index: 0, item });
          const r = this.response('completed', [item], true);
          out += this.ev('response.completed', { response: r });
          this.store(r, [{ kind: 'assistant', text }], []);
          return out;
        },
        failure: (mode, sent, text) => {
          this.seq = base + sent;
          if (mode === 'failed') {
            const error = { code: 'server_error', message: MID_STREAM_MESSAGE };
            const r = this.response('failed', [this.messageItem(text, 'incomplete')], false, { error });
            return this.ev('response.failed', { response: r });
          }
          return this.ev('error', {
            error: { type: 'server_error', code: 'server_error', message: MID_STREAM_MESSAGE, param: null },
          });
        },
      },
      this.headers(),
    );
  }
}
