// provider_c and provider_d: Chat Completions (POST /chat/completions), streaming and not, with
// fragmented tool calls, the include_usage tail chunk, and provider_d's custom agent frames.
import { readChatRequest, type ChatInput } from './chat-input.ts';
import { callFailure, resetConnection, streamDirective } from './faults.ts';
import { openaiError, openaiNotFound, openaiPreamble, openaiScriptedMessage } from './errors.ts';
import { newId, sendJson, unixNow } from './http.ts';
import { beforeStatus } from './gates.ts';
import { argFragments, fullText, plan, type Plan } from './script.ts';
import { frame, sendFrames, startStream, planned } from './sse.ts';
import type { Ctx } from './state.ts';

const MID_STREAM_MESSAGE = 'The server had an error while processing your request (simulated mid-stream failure).';

/** What an agent endpoint interleaves with the completion chunks; clients must drop them. */
const CUSTOM_FRAMES =
  frame('agent.step', { type: 'agent.step', step: 1, status: 'planning', detail: 'Looking at the question' }) +
  frame(null, { type: 'progress', message: 'thinking' });

export async function handleChat(ctx: Ctx): Promise<void> {
  if (ctx.path !== '/chat/completions' || ctx.req.method !== 'POST') return openaiNotFound(ctx, '/v1');
  if (!openaiPreamble(ctx)) return;
  const input = readChatRequest(ctx.body);
  if (input.invalid) return openaiError(ctx.res, 400, { message: input.message, param: input.param, code: input.code });
  const p = plan(input.conv, ctx.state.defaultReply);
  const d = p.directive;
  if (!(await beforeStatus(ctx.res, ctx.state.gates, d))) return;
  const f = callFailure(ctx.state.faults, ctx, d);
  if (f?.kind === 'reset') return resetConnection(ctx.res);
  if (f?.kind === 'status') return openaiError(ctx.res, f.status, { message: openaiScriptedMessage(f.status) }, f.headers);
  new ChatRun(ctx, input, { ...p, directive: streamDirective(d, f) }).run();
}

class ChatRun {
  readonly hex = newId('');
  readonly id = `chatcmpl-${this.hex}`;
  readonly created = unixNow();
  readonly headers = { 'x-request-id': newId('req_'), 'openai-processing-ms': '1' };
  /** Everything before `"choices":` in a chunk, so each chunk is one concatenation. */
  readonly chunkHead: string;
  readonly usageNull: string;

  constructor(
    readonly ctx: Ctx,
    readonly input: ChatInput,
    readonly p: Plan,
  ) {
    this.chunkHead =
      `data: {"id":"${this.id}","object":"chat.completion.chunk","created":${this.created},` +
      `"model":${JSON.stringify(input.model)},"service_tier":"default","system_fingerprint":"fp_sim","choices":`;
    // With include_usage every chunk carries "usage":null except the last one.
    this.usageNull = this.reportsUsage() ? ',"usage":null' : '';
  }

  run(): void {
    if (!this.input.stream) return this.reply();
    if (this.p.calls) return this.streamCalls();
    this.streamText();
  }

  callId(k: number): string {
    return `call_${this.hex}_${k}`;
  }

  /** Streams report usage when asked to; `noUsage` plays a compatible server that ignores the ask. */
  reportsUsage(): boolean {
    return this.input.includeUsage && this.p.directive.noUsage !== true;
  }

  usage(): Record<string, unknown> {
    const { inputTokens, outputTokens, cachedTokens } = this.p;
    return {
      prompt_tokens: inputTokens,
      completion_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
      prompt_tokens_details: { cached_tokens: cachedTokens, audio_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 },
    };
  }

  chunk(delta: unknown, finish: string | null = null): string {
    const choice = { index: 0, delta, logprobs: null, finish_reason: finish };
    return `${this.chunkHead}[${JSON.stringify(choice)}]${this.usageNull}}\n\n`;
  }

  end(finish: string): string {
    let out = this.chunk({}, finish);
    if (this.reportsUsage()) out += `${this.chunkHead}[],"usage":${JSON.stringify(this.usage())}}\n\n`;
    return out + 'data: [DONE]\n\n';
  }

  custom(): string {
    return this.p.directive.custom ? CUSTOM_FRAMES : '';
  }

  reply(): void {
    const { p, ctx } = this;
    let message: Record<string, unknown>;
    let finish = 'stop';
    if (p.calls) {
      finish = 'tool_calls';
      message = {
        role: 'assistant',
        content: null,
        refusal: null,
        annotations: [],
        tool_calls: p.calls.map((c, k) => ({ id: this.callId(k), type: 'function', function: { name: c.name, arguments: c.arguments } })),
      };
    } else {
      const fa = p.directive.failAfter;
      if (fa !== undefined) {
        // Non-streaming has no stream to break: the scripted failure becomes the whole answer.
        if (p.directive.failMode === 'disconnect') return void ctx.res.socket?.destroy();
        return openaiError(ctx.res, 500, { message: MID_STREAM_MESSAGE });
      }
      message = { role: 'assistant', content: fullText(p.deltas), refusal: null, annotations: [] };
    }
    const body = {
      id: this.id,
      object: 'chat.completion',
      created: this.created,
      model: this.input.model,
      choices: [{ index: 0, message, logprobs: null, finish_reason: finish }],
      ...(p.directive.noUsage ? {} : { usage: this.usage() }),
      service_tier: 'default',
      system_fingerprint: 'fp_sim',
    };
    sendJson(ctx.res, 200, body, this.headers);
  }

  streamCalls(): void {
    let out = this.chunk({ role: 'assistant', content: null, refusal: null }) + this.custom();
    this.p.calls!.forEach((c, index) => {
      out += this.chunk({
        tool_calls: [{ index, id: this.callId(index), type: 'function', function: { name: c.name, arguments: '' } }],
      });
      for (const a of argFragments(c.arguments)) out += this.chunk({ tool_calls: [{ index, function: { arguments: a } }] });
    });
    sendFrames(this.ctx.res, out + this.end('tool_calls'), this.headers);
  }

  streamText(): void {
    const { p } = this;
    const pre = `${this.chunkHead}[{"index":0,"delta":{"content":`;
    const post = `},"logprobs":null,"finish_reason":null}]${this.usageNull}}\n\n`;
    startStream(
      {
        ...planned(this.ctx, p),
        head: this.chunk({ role: 'assistant', content: '', refusal: null }) + this.custom(),
        delta: (_i, t) => pre + JSON.stringify(t) + post,
        tail: () => this.end('stop'),
        failure: () => frame(null, { error: { message: MID_STREAM_MESSAGE, type: 'server_error', param: null, code: 'server_error' } }),
      },
      this.headers,
    );
  }
}
