// provider_b: the Messages API through `@anthropic-ai/sdk`. It never gets service tools (spec rule 10),
// so every session is a single round. It is offered only an OpenAI-compatible client's functions: a call
// to one ends the round with it (`tool_use`), handed to the client, and the client's history comes back
// as `tool_use` and `tool_result` blocks; other tool-role history becomes plain user text.
import type Anthropic from '@anthropic-ai/sdk';
import type {
  CacheControlEphemeral,
  ContentBlockParam,
  Message,
  MessageCreateParamsNonStreaming,
  MessageParam,
  RawMessageStreamEvent,
  Tool,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { messagesBlocks, toolMessageText, userAttachments } from './attachments.ts';
import { checkWholeBody, toProviderError, truncatedStream } from './errors.ts';
import { createSession, eachFrame, type RoundCalls, type RoundRetry } from './session.ts';
import { anthropicFrames, idleLimit, SseFrames, type IdleLimit } from './sse.ts';
import {
  ProviderError,
  type CompletionRequest,
  type ProviderAdapter,
  type ProviderMessage,
  type RoundEnd,
  type TextSink,
  type ToolCallRequest,
  type ToolResultInput,
  type ToolSpec,
  type Usage,
} from './types.ts';

const NAME = 'provider_b';
/** `max_tokens` is required by the API; used when the request sets no limit. */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * The model asked for a tool although none was offered (it may, from its own training). Its turn
 * then holds no answer, so the run fails clearly instead of ending with an empty text.
 */
function toolUseRefused(name: string): ProviderError {
  return new ProviderError(`${NAME} answered with a call to the tool \`${name}\` instead of text, but ${NAME} runs without service tools: no answer`);
}

/** A client's functions as the Messages API's tools (its `input_schema` must be an object schema). */
const messagesTools = (tools: ToolSpec[]): Tool[] =>
  tools.map((t) => ({ name: t.name, description: t.description, input_schema: { type: 'object', ...t.parameters } as Tool['input_schema'] }));

/** A call's arguments as a `tool_use` block's input: an object (a call whose JSON is no object sends it as a string field). */
function toolInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args || '{}');
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // Not JSON: kept as it came.
  }
  return { arguments: args };
}

/** The blocks of one history message: an assistant's calls and a tool result as the API's own blocks. */
function historyBlocks(m: ProviderMessage): ContentBlockParam[] {
  if (m.role === 'tool' && m.toolCallId !== undefined) return [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }];
  const blocks = messagesBlocks(m.role === 'tool' ? toolMessageText(m) : m.content, userAttachments(m));
  if (m.role === 'assistant' && m.toolCalls?.length) for (const c of m.toolCalls) blocks.push({ type: 'tool_use', id: c.callId, name: c.name, input: toolInput(c.arguments) });
  return blocks;
}

/**
 * Throws for a stop that leaves no answer: `refusal` is the API's safety classifiers stopping the
 * answer part-way, which is no answer to store (as the other providers' content-filter endings are not),
 * and `max_tokens` before any text (`texted` false) left nothing.
 */
function checkStop(stopReason: string | null, texted: boolean): void {
  if (stopReason === 'refusal') throw new ProviderError(`${NAME} declined to go on with the answer (stop_reason: refusal)`);
  if (stopReason === 'max_tokens' && !texted) throw new ProviderError(`${NAME} reached the token limit (stop_reason: max_tokens) before any answer text`);
}

/** `idleMs` (PROVIDER_TIMEOUT_MS): the longest a stream may go without an event that carries data (eachFrame). */
export function createProviderB(client: Anthropic, { idleMs, retry }: { idleMs?: number; retry?: RoundRetry } = {}): ProviderAdapter {
  const idle = idleLimit(NAME, idleMs);
  return {
    name: NAME,
    startSession: (req) => createSession(NAME, req, new MessagesRounds(client, req, idle), retry),
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
    const blocks = historyBlocks(m);
    if (!blocks.length) continue;
    const last = out[out.length - 1];
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  }
  trimPrefill(out[out.length - 1]);
  return { system: system.length ? system.join('\n\n') : undefined, messages: out };
}

/**
 * A trailing assistant turn is continued by the model (a prefill), and the API refuses one whose content
 * ends in whitespace (400). Its last block is text that is not only whitespace (messagesBlocks).
 */
function trimPrefill(last: { role: string; content: ContentBlockParam[] } | undefined): void {
  const block = last?.role === 'assistant' ? last.content[last.content.length - 1] : undefined;
  if (block?.type === 'text') block.text = block.text.trimEnd();
}

const EPHEMERAL: CacheControlEphemeral = { type: 'ephemeral' };

/**
 * Prompt caching: the stable prefix of a request, the system prompt and the history before the last
 * user turn, is marked with `cache_control` on its last block, so the next turn of the chat (which
 * repeats that prefix and adds to it) reads it from the cache at a tenth of the input price instead
 * of paying its whole history again; the API finds the previous turn's mark by itself. Two marks of
 * the API's four. The messages' blocks are this request's own (toMessagesParams made them).
 */
export function markStablePrefix(params: { system: string | undefined; messages: MessageParam[] }): {
  system: MessageCreateParamsNonStreaming['system'];
  messages: MessageParam[];
} {
  const { messages } = params;
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') {
      lastUser = i;
      break;
    }
  }
  const history = lastUser > 0 ? (messages[lastUser - 1]!.content as ContentBlockParam[]) : null;
  const last = history?.[history.length - 1];
  // Every block messagesBlocks makes (text, image, document) takes a mark.
  if (last && (last.type === 'text' || last.type === 'image' || last.type === 'document')) history![history!.length - 1] = { ...last, cache_control: EPHEMERAL };
  const system = params.system === undefined ? undefined : [{ type: 'text' as const, text: params.system, cache_control: EPHEMERAL }];
  return { system, messages };
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

/** The round's usage; the cache's part of the input is kept apart when the API reported one. */
function usage(u: UsageLike, output: number): Usage {
  const input = inputTokens(u);
  const out: Usage = { inputTokens: input, outputTokens: output, totalTokens: input + output };
  if (u.cache_read_input_tokens) out.cacheReadTokens = u.cache_read_input_tokens;
  if (u.cache_creation_input_tokens) out.cacheWriteTokens = u.cache_creation_input_tokens;
  return out;
}

class MessagesRounds implements RoundCalls<MessageCreateParamsNonStreaming> {
  private done = false;

  constructor(
    private readonly client: Anthropic,
    private readonly req: CompletionRequest,
    private readonly idle: IdleLimit | undefined,
  ) {}

  /** A call of a function the round offered (a client's); any other is the refused tool_use. */
  private offered(call: ToolCallRequest): ToolCallRequest {
    if (!this.req.tools.some((t) => t.name === call.name)) throw toolUseRefused(call.name);
    return call;
  }

  body(toolResults: ToolResultInput[] | null): MessageCreateParamsNonStreaming {
    // Only a client's functions are ever offered, and their calls end the run: no results come back here.
    if (toolResults || this.done) throw new ProviderError(`${NAME} has no tool rounds`);
    this.done = true;
    const { req } = this;
    const { system, messages } = markStablePrefix(toMessagesParams(req.messages));
    return {
      model: req.model,
      max_tokens: req.maxTokens ?? DEFAULT_MAX_TOKENS,
      messages,
      ...(req.tools.length > 0 && { tools: messagesTools(req.tools) }),
      ...(system !== undefined && { system }),
      ...(req.temperature !== undefined && { temperature: req.temperature }),
      ...(req.topP !== undefined && { top_p: req.topP }),
      ...(req.stop !== undefined && { stop_sequences: req.stop }),
    };
  }

  async whole(body: MessageCreateParamsNonStreaming, onText: TextSink): Promise<RoundEnd> {
    const message: Message = await this.client.messages.create(body, { signal: this.req.signal });
    checkWholeBody(NAME, message, Array.isArray(message?.content), 'content');
    let text = '';
    const toolCalls: ToolCallRequest[] = [];
    for (const block of message.content) {
      if (block.type === 'text') text += block.text;
      else if (block.type === 'tool_use') toolCalls.push(this.offered({ callId: block.id, name: block.name, arguments: JSON.stringify(block.input ?? {}) }));
    }
    checkStop(message.stop_reason, text !== '' || toolCalls.length > 0);
    if (text) onText(text);
    const u = message.usage;
    return {
      toolCalls,
      usage: u ? usage(u, u.output_tokens ?? 0) : null,
      finishReason: message.stop_reason ?? null,
      raw: message,
    };
  }

  async streamed(body: MessageCreateParamsNonStreaming, onText: TextSink): Promise<RoundEnd> {
    const { signal } = this.req;
    // The SDK sends the request and throws its typed error for a non-2xx; the body is read here (sse.ts).
    const response = await this.client.messages.create({ ...body, stream: true }, { signal }).asResponse();
    const s = { id: null as string | null, model: null as string | null, input: {} as UsageLike, output: 0, stopReason: null as string | null, stopped: false, texted: false };
    // The calls' blocks by index, their JSON input as it streams (input_json_delta).
    const calls = new Map<number, ToolCallRequest>();
    const sse = new SseFrames(response.headers, anthropicFrames, this.idle);
    await eachFrame<RawMessageStreamEvent>(response, sse, signal, (ev) => {
      switch (ev.type) {
        case 'content_block_delta':
          if (ev.delta.type === 'text_delta' && ev.delta.text) {
            s.texted = true;
            onText(ev.delta.text);
          } else if (ev.delta.type === 'input_json_delta') {
            const call = calls.get(ev.index);
            if (call) call.arguments += ev.delta.partial_json;
          }
          break;
        case 'content_block_start':
          if (ev.content_block.type === 'tool_use') calls.set(ev.index, { callId: ev.content_block.id, name: ev.content_block.name, arguments: '' });
          break;
        case 'message_start':
          s.id = ev.message.id;
          s.model = ev.message.model;
          s.input = ev.message.usage ?? {};
          s.output = ev.message.usage?.output_tokens ?? 0;
          break;
        case 'message_delta':
          s.stopReason = ev.delta.stop_reason ?? s.stopReason;
          // A running total, not an increment.
          if (ev.usage?.output_tokens != null) s.output = ev.usage.output_tokens;
          break;
        case 'message_stop':
          s.stopped = true;
          break;
      }
    });
    if (!s.stopped) throw truncatedStream(NAME, sse);
    const toolCalls = [...calls.values()].map((c) => this.offered({ ...c, arguments: c.arguments || '{}' }));
    checkStop(s.stopReason, s.texted || toolCalls.length > 0);
    const u = usage(s.input, s.output);
    return { toolCalls, usage: u, finishReason: s.stopReason, raw: { id: s.id, model: s.model, stop_reason: s.stopReason, usage: u } };
  }
}
