// provider_b: the Messages API through `@anthropic-ai/sdk`. It never gets service tools (spec rule 10),
// so every session is a single round and tool-role history becomes plain user text.
import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  RawMessageStreamEvent,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { messagesBlocks, toolMessageText, userAttachments } from './attachments.ts';
import { toProviderError, truncatedStream } from './errors.ts';
import { anthropicFrames, SseFrames, streamBody } from './sse.ts';
import {
  ProviderError,
  type CompletionRequest,
  type ProviderAdapter,
  type ProviderEvent,
  type ProviderMessage,
  type ProviderSession,
  type ToolResultInput,
  type Usage,
} from './types.ts';

const NAME = 'provider_b';
/** `max_tokens` is required by the API; used when the request sets no limit. */
export const DEFAULT_MAX_TOKENS = 4096;

export function createProviderB(client: Anthropic): ProviderAdapter {
  return {
    name: NAME,
    startSession: (req) => new MessagesSession(client, req),
    async listModels(signal) {
      try {
        const ids: string[] = [];
        // The page iterator follows `after_id` while `has_more` is true.
        for await (const m of client.models.list({ limit: 100 }, { signal })) ids.push(m.id);
        return ids;
      } catch (err) {
        throw toProviderError(NAME, err, signal);
      }
    },
  };
}

/** The API demands alternating roles, so consecutive same-role messages are merged into one. */
export function toMessagesParams(messages: ProviderMessage[]): { system: string | undefined; messages: MessageParam[] } {
  const system: string[] = [];
  const out: { role: 'user' | 'assistant'; content: ContentBlockParam[] }[] = [];
  for (const m of messages) {
    if (m.role === 'system') {
      system.push(m.content);
      continue;
    }
    const role = m.role === 'assistant' ? 'assistant' : 'user';
    const blocks = messagesBlocks(m.role === 'tool' ? toolMessageText(m) : m.content, userAttachments(m));
    if (!blocks.length) continue;
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  }
  return { system: system.length ? system.join('\n\n') : undefined, messages: out };
}

type UsageLike = {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
};

/** Cache writes and reads are input the model processed, so they count as input tokens. */
function inputTokens(u: UsageLike): number {
  return (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
}

function usage(input: number, output: number): Usage {
  return { inputTokens: input, outputTokens: output, totalTokens: input + output };
}

class MessagesSession implements ProviderSession {
  /** Where this round's text goes when the caller took it synchronously (see ProviderSession.round). */
  private onText: ((text: string) => void) | null = null;
  private done = false;

  constructor(
    private readonly client: Anthropic,
    private readonly req: CompletionRequest,
  ) {}

  round(toolResults: ToolResultInput[] | null, onText?: (text: string) => void): AsyncIterable<ProviderEvent> {
    this.onText = onText ?? null;
    return this.run(toolResults);
  }

  private async *run(toolResults: ToolResultInput[] | null): AsyncGenerator<ProviderEvent> {
    try {
      // No tools are ever offered, so the model cannot have asked for results.
      if (toolResults || this.done) throw new ProviderError(`${NAME} has no tool rounds`);
      this.done = true;
      const { req } = this;
      const { system, messages } = toMessagesParams(req.messages);
      const body: MessageCreateParamsNonStreaming = {
        model: req.model,
        max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
        messages,
        ...(system !== undefined && { system }),
        ...(req.temperature !== undefined && { temperature: req.temperature }),
      };
      if (req.stream) yield* this.streamed(body);
      else yield* this.whole(body);
    } catch (err) {
      throw toProviderError(NAME, err, this.req.signal);
    }
  }

  private async *whole(body: MessageCreateParamsNonStreaming): AsyncGenerator<ProviderEvent> {
    const message: Message = await this.client.messages.create(body, { signal: this.req.signal });
    let text = '';
    for (const block of message.content ?? []) if (block.type === 'text') text += block.text;
    if (text) {
      if (this.onText) this.onText(text);
      else yield { type: 'text', text: text };
    }
    const u = message.usage;
    yield {
      type: 'round_end',
      toolCalls: [],
      usage: u ? usage(inputTokens(u), u.output_tokens ?? 0) : null,
      finishReason: message.stop_reason ?? null,
      raw: message,
    };
  }

  private async *streamed(body: MessageCreateParamsNonStreaming): AsyncGenerator<ProviderEvent> {
    const { signal } = this.req;
    // The SDK sends the request and throws its typed error for a non-2xx; the body is read here (sse.ts).
    const response = await this.client.messages.create({ ...body, stream: true }, { signal }).asResponse();
    const sse = new SseFrames(response.headers, anthropicFrames);
    let id: string | null = null;
    let model: string | null = null;
    let input = 0;
    let output = 0;
    let stopReason: string | null = null;
    let stopped = false;
    // One await per socket read; the events it completed are handled synchronously.
    for await (const bytes of streamBody(response)) {
      const events = sse.feed(bytes) as RawMessageStreamEvent[];
      for (let i = 0; i < events.length; i++) {
        const ev = events[i];
        switch (ev.type) {
          case 'content_block_delta':
            if (ev.delta.type === 'text_delta' && ev.delta.text) {
              if (this.onText) this.onText(ev.delta.text);
              else yield { type: 'text', text: ev.delta.text };
            }
            break;
          case 'message_start':
            id = ev.message.id;
            model = ev.message.model;
            input = inputTokens(ev.message.usage ?? {});
            output = ev.message.usage?.output_tokens ?? 0;
            break;
          case 'message_delta':
            stopReason = ev.delta.stop_reason ?? stopReason;
            // A running total, not an increment.
            if (ev.usage?.output_tokens != null) output = ev.usage.output_tokens;
            break;
          case 'message_stop':
            stopped = true;
            break;
        }
      }
      // An `event: error` frame (status-less APIError, mapped in run()) or an unparsable one, after the events before it.
      if (sse.failure !== undefined) throw sse.failure;
    }
    // An abort normally rejects the read above; this catches one that lands as the body ends. The mapper
    // turns either into an abort.
    if (signal.aborted) throw signal.reason;
    if (!stopped) throw truncatedStream(NAME);
    const u = usage(input, output);
    yield { type: 'round_end', toolCalls: [], usage: u, finishReason: stopReason, raw: { id, model, stop_reason: stopReason, usage: u } };
  }
}
