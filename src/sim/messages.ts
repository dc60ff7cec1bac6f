// provider_b: the Messages-style API (POST /v1/messages), streaming and not, with tool_use blocks.
import { callFailure, resetConnection, streamDirective } from './faults.ts';
import { anthropicError, anthropicScriptedMessage } from './errors.ts';
import { newId, ParseFailure, sendJson } from './http.ts';
import { beforeStatus } from './gates.ts';
import { readMessagesRequest, type MessagesInput } from './messages-input.ts';
import { argFragments, continuation, fullText, plan, type Plan } from './script.ts';
import { usePromptCache, type CacheUse } from './prompt-cache.ts';
import { frame, sendFrames, startStream, planned } from './sse.ts';
import type { Ctx } from './state.ts';

const OVERLOADED = { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } };

/** x-api-key (0.x SDKs) or Authorization: Bearer (1.x SDKs): both are real. */
export function anthropicAuthorized(ctx: Ctx): boolean {
  const key = ctx.req.headers['x-api-key'];
  if (typeof key === 'string' && key.trim() !== '') return true;
  const auth = ctx.req.headers.authorization;
  return typeof auth === 'string' && /^Bearer\s+\S+/i.test(auth.trim());
}

export async function handleMessages(ctx: Ctx): Promise<void> {
  const { res } = ctx;
  if (ctx.path !== '/v1/messages' || ctx.req.method !== 'POST') return anthropicError(res, 404, 'Not Found');
  if (!anthropicAuthorized(ctx)) return anthropicError(res, 401, 'x-api-key header is required');
  if (!ctx.req.headers['anthropic-version']) return anthropicError(res, 400, 'anthropic-version: header is required');
  if (ctx.body instanceof ParseFailure || ctx.body === undefined) {
    return anthropicError(res, 400, 'There was an error parsing the body of your request: it is not valid JSON');
  }
  const input = readMessagesRequest(ctx.body);
  if (input.invalid) return anthropicError(res, 400, input.message);
  const p = continuation(input.conv, plan(input.conv, ctx.state.defaultReply));
  const d = p.directive;
  if (!(await beforeStatus(ctx.res, ctx.state.gates, d))) return;
  const f = callFailure(ctx.state.faults, ctx, d);
  if (f?.kind === 'reset') return resetConnection(ctx.res);
  if (f?.kind === 'status') return anthropicError(res, f.status, anthropicScriptedMessage(f.status), undefined, f.headers);
  // A refused request reads and writes no cache; an accepted one does, once, before its first byte.
  const cache = usePromptCache(ctx.state.promptCache, input.blocks, p.inputTokens);
  // A scripted `usage.cached` is read from the cache too (on top of what cache_control found).
  const read = Math.min(p.inputTokens - cache.write, cache.read + p.cachedTokens);
  new MessageRun(ctx, input, { ...p, directive: streamDirective(d, f) }, { read, write: cache.write }).run();
}

class MessageRun {
  readonly hex = newId('');
  readonly id = `msg_${this.hex}`;
  readonly headers = { 'request-id': newId('req_') };

  constructor(
    readonly ctx: Ctx,
    readonly input: MessagesInput,
    readonly p: Plan,
    readonly cache: CacheUse,
  ) {}

  run(): void {
    if (!this.input.stream) return this.reply();
    if (this.p.calls) return this.streamCalls();
    this.streamText();
  }

  message(content: unknown[], stopReason: string | null, outputTokens: number): Record<string, unknown> {
    return {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.input.model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: {
        input_tokens: this.p.inputTokens - this.cache.read - this.cache.write,
        cache_creation_input_tokens: this.cache.write,
        cache_read_input_tokens: this.cache.read,
        output_tokens: outputTokens,
        service_tier: 'standard',
      },
    };
  }

  toolBlocks(): Record<string, unknown>[] {
    return this.p.calls!.map((c, k) => ({
      type: 'tool_use',
      id: `toolu_${this.hex}_${k}`,
      name: c.name,
      input: JSON.parse(c.arguments) as unknown,
    }));
  }

  reply(): void {
    const { p, ctx } = this;
    if (p.calls) return sendJson(ctx.res, 200, this.message(this.toolBlocks(), 'tool_use', p.outputTokens), this.headers);
    if (p.directive.failAfter !== undefined) {
      // Non-streaming has no stream to break: the scripted failure becomes the whole answer.
      if (p.directive.failMode === 'disconnect') return void ctx.res.socket?.destroy();
      return anthropicError(ctx.res, 529, 'Overloaded');
    }
    const text = fullText(p.deltas);
    sendJson(ctx.res, 200, this.message([{ type: 'text', text }], 'end_turn', p.outputTokens), this.headers);
  }

  start(): string {
    return frame('message_start', { type: 'message_start', message: this.message([], null, 1) });
  }

  end(stopReason: string): string {
    return (
      frame('message_delta', {
        type: 'message_delta',
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: this.p.outputTokens },
      }) + frame('message_stop', { type: 'message_stop' })
    );
  }

  streamCalls(): void {
    let out = this.start();
    this.toolBlocks().forEach((b, index) => {
      out += frame('content_block_start', { type: 'content_block_start', index, content_block: { ...b, input: {} } });
      if (index === 0) out += frame('ping', { type: 'ping' });
      for (const partial_json of ['', ...argFragments(JSON.stringify(b.input))]) {
        out += frame('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json } });
      }
      out += frame('content_block_stop', { type: 'content_block_stop', index });
    });
    sendFrames(this.ctx.res, out + this.end('tool_use'), this.headers);
  }

  streamText(): void {
    const { p } = this;
    const head =
      this.start() +
      frame('content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
      frame('ping', { type: 'ping' });
    const pre = 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":';
    const post = '}}\n\n';
    startStream(
      {
        ...planned(this.ctx, p),
        head,
        delta: (_i, t) => pre + JSON.stringify(t) + post,
        tail: () => frame('content_block_stop', { type: 'content_block_stop', index: 0 }) + this.end('end_turn'),
        failure: () => frame('error', OVERLOADED),
      },
      this.headers,
    );
  }
}
