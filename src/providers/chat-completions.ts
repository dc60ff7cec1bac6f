// provider_c and provider_d: OpenAI-compatible Chat Completions through the `openai` SDK. The session
// owns its message list; a tool round appends the assistant `tool_calls` message and one `tool`
// message per result, then calls again. provider_d is an agent endpoint that runs its own tools, so it
// never gets tool definitions and any tool_calls it reports are not ours to run.
//
// Servers here are only "compatible", and neither the SDK nor this code can trust chunk shapes, so
// stream chunks are read defensively (a wrong shape is skipped, never a TypeError).
import type OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions/completions';
import { chatParts, toolMessageText, userAttachments } from './attachments.ts';
import { checkWholeBody, toProviderError, truncatedStream } from './errors.ts';
import { createSession, eachFrame, type RoundCalls, type RoundRetry } from './session.ts';
import { idleLimit, openaiFrames, SseFrames, type IdleLimit } from './sse.ts';
import {
  ProviderError,
  type CompletionRequest,
  type HintSink,
  type ProviderAdapter,
  type ProviderName,
  type RoundEnd,
  type TextSink,
  type ToolCallRequest,
  type ToolResultInput,
  type Usage,
} from './types.ts';

export interface ChatCompletionsOptions {
  name: ProviderName;
  client: OpenAI;
  /**
   * Agent endpoints send custom frames (an `event:` name, or data without `choices`). They are dropped
   * unless they carry text as a top-level string `text` or `content`, or a string `delta.content`;
   * only then is that string emitted as a text delta. Other frames never reach the caller.
   */
  textFromCustomFrames?: boolean;
  /**
   * AGENT_PROVIDER_MODEL: listed first when the endpoint's list lacks it, and the whole list when the
   * endpoint cannot list models (agent endpoints often have no /models).
   */
  extraModel?: string;
  /** PROVIDER_TIMEOUT_MS: the longest a stream may go without a chunk that carries data (eachFrame). */
  idleMs?: number;
  /** The resilience layer's retry loop (resilience/resilient.ts); none: one call per round. */
  retry?: RoundRetry;
}

export function createChatCompletionsAdapter(opts: ChatCompletionsOptions): ProviderAdapter {
  const { name, client, extraModel } = opts;
  return {
    name,
    startSession: (req) => createSession(name, req, new ChatRounds(opts, req), opts.retry),
    async listModels(signal, listing) {
      let ids: string[];
      try {
        ids = [];
        for await (const m of client.models.list({ signal })) if (typeof m?.id === 'string') ids.push(m.id);
      } catch (err) {
        if (extraModel && listing?.fallback !== false && !signal?.aborted) return [extraModel];
        throw toProviderError(name, err, signal);
      }
      ids.sort();
      return extraModel && !ids.includes(extraModel) ? [extraModel, ...ids] : ids;
    },
  };
}

type Loose = Record<string, any>;

function isObject(v: unknown): v is Loose {
  return typeof v === 'object' && v !== null;
}

function toUsage(u: unknown): Usage | null {
  if (!isObject(u)) return null;
  const inputTokens = typeof u.prompt_tokens === 'number' ? u.prompt_tokens : 0;
  const outputTokens = typeof u.completion_tokens === 'number' ? u.completion_tokens : 0;
  const totalTokens = typeof u.total_tokens === 'number' ? u.total_tokens : inputTokens + outputTokens;
  const usage: Usage = { inputTokens, outputTokens, totalTokens };
  const cached: unknown = isObject(u.prompt_tokens_details) ? u.prompt_tokens_details.cached_tokens : undefined;
  if (typeof cached === 'number' && cached > 0) usage.cacheReadTokens = cached;
  return usage;
}

/** The text a custom (choice-less) frame carries, if any; see ChatCompletionsOptions.textFromCustomFrames. */
export function customFrameText(frame: Loose): string | undefined {
  if (typeof frame.text === 'string') return frame.text;
  if (typeof frame.content === 'string') return frame.content;
  if (isObject(frame.delta) && typeof frame.delta.content === 'string') return frame.delta.content;
  return undefined;
}

export function toChatMessages(req: CompletionRequest): ChatCompletionMessageParam[] {
  return req.messages.map((m): ChatCompletionMessageParam => {
    if (m.role === 'system') return { role: 'system', content: m.content };
    if (m.role === 'assistant') {
      if (!m.toolCalls?.length) return { role: 'assistant', content: m.content };
      const calls = m.toolCalls.map((c) => ({ id: c.callId, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));
      return { role: 'assistant', content: m.content || null, tool_calls: calls };
    }
    if (m.role === 'tool') return m.toolCallId !== undefined ? { role: 'tool', tool_call_id: m.toolCallId, content: m.content } : { role: 'user', content: toolMessageText(m) };
    const attachments = userAttachments(m);
    // Plain string content when there is nothing to attach: the widest-accepted form among compatible servers.
    return { role: 'user', content: attachments.length ? chatParts(m.content, attachments) : m.content };
  });
}

/**
 * Throws for a finish that leaves no answer: a choice the provider's content filter cut is no answer to
 * store, as provider_a's `incomplete: content_filter` is not. A `length` finish is the caller's own limit
 * and ends a text answer normally, but `calls` (ours to run) that it cut end mid-arguments, and a limit
 * a reasoning model spent before writing any text (`texted` false) left nothing (provider_a fails both).
 */
function checkFinish(name: ProviderName, finishReason: string | null, calls: number, texted: boolean): void {
  if (finishReason === 'content_filter') {
    throw new ProviderError(`${name} response stopped by the provider's content filter (finish_reason: content_filter)`);
  }
  if (finishReason !== 'length') return;
  if (calls > 0) throw new ProviderError(`${name} response incomplete: the token limit (finish_reason: length) cut a tool call`);
  if (!texted) throw new ProviderError(`${name} reached the token limit (finish_reason: length) before any answer text`);
}

interface CallDraft {
  id: string;
  name: string;
  args: string;
}

class ChatRounds implements RoundCalls<ChatCompletionCreateParamsNonStreaming> {
  private readonly name: ProviderName;
  private readonly messages: ChatCompletionMessageParam[];
  private readonly tools: ChatCompletionTool[] | undefined;
  private readonly idle: IdleLimit | undefined;
  /** The assistant message of the last round's tool calls, appended once their results come back. */
  private pending: ChatCompletionAssistantMessageParam | null = null;
  private rounds = 0;

  constructor(
    private readonly opts: ChatCompletionsOptions,
    private readonly req: CompletionRequest,
  ) {
    this.name = opts.name;
    this.messages = toChatMessages(req);
    // Sent only when offered, and only then are reported calls taken: provider_d is never offered service
    // tools (chat/tools.ts), only an OpenAI-compatible client's functions, so without them it gets none.
    this.tools =
      req.tools.length
        ? req.tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }))
        : undefined;
    this.idle = idleLimit(this.name, opts.idleMs);
  }

  body(toolResults: ToolResultInput[] | null): ChatCompletionCreateParamsNonStreaming {
    if (toolResults) {
      if (!this.pending) throw new ProviderError(`${this.name}: tool results given without a tool-call round`);
      this.messages.push(this.pending);
      for (const r of toolResults) this.messages.push({ role: 'tool', tool_call_id: r.callId, content: r.output });
    }
    this.pending = null;
    this.rounds++;
    const { req } = this;
    return {
      model: req.model,
      messages: this.messages,
      ...(this.tools && { tools: this.tools }),
      ...(req.maxTokens !== undefined && { max_completion_tokens: req.maxTokens }),
      ...(req.temperature !== undefined && { temperature: req.temperature }),
      ...(req.topP !== undefined && { top_p: req.topP }),
      ...(req.stop !== undefined && { stop: req.stop }),
    };
  }

  /** Records the assistant turn to replay next round; returns the calls for the round's end. */
  private finishCalls(drafts: CallDraft[], text: string | null): ToolCallRequest[] {
    if (!this.tools || !drafts.length) return [];
    const calls = drafts.map((d, i) => ({ callId: d.id || `call_${this.rounds}_${i}`, name: d.name, arguments: d.args }));
    this.pending = {
      role: 'assistant',
      content: text || null,
      tool_calls: calls.map((c) => ({ id: c.callId, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    };
    return calls;
  }

  async whole(body: ChatCompletionCreateParamsNonStreaming, onText: TextSink): Promise<RoundEnd> {
    const response: ChatCompletion = await this.opts.client.chat.completions.create(body, { signal: this.req.signal });
    const choice: Loose | undefined = Array.isArray(response?.choices) ? response.choices[0] : undefined;
    checkWholeBody(this.name, response, isObject(choice), 'choices');
    const message: Loose = isObject(choice?.message) ? choice.message : {};
    const text = typeof message.content === 'string' ? message.content : '';
    const drafts: CallDraft[] = [];
    if (Array.isArray(message.tool_calls)) {
      for (const tc of message.tool_calls) {
        if (!isObject(tc) || !isObject(tc.function) || typeof tc.function.name !== 'string') continue;
        const args = tc.function.arguments;
        drafts.push({ id: typeof tc.id === 'string' ? tc.id : '', name: tc.function.name, args: typeof args === 'string' ? args : '' });
      }
    }
    const finishReason = typeof choice?.finish_reason === 'string' ? choice.finish_reason : null;
    checkFinish(this.name, finishReason, this.tools ? drafts.length : 0, text !== '');
    if (text) onText(text);
    const toolCalls = this.finishCalls(drafts, text);
    return { toolCalls, usage: toUsage(response?.usage), finishReason, raw: response };
  }

  async streamed(body: ChatCompletionCreateParamsNonStreaming, onText: TextSink, onHint: HintSink): Promise<RoundEnd> {
    const { signal } = this.req;
    const customText = this.opts.textFromCustomFrames === true;
    const tools = this.tools;
    // The SDK sends the request and throws its typed error for a non-2xx; the body is read here (sse.ts).
    const response = await this.opts.client.chat.completions
      .create({ ...body, stream: true, stream_options: { include_usage: true } }, { signal })
      .asResponse();
    // Text is kept only when tools were offered: a tool round's assistant message must carry it.
    const keepText: string[] | null = tools ? [] : null;
    const drafts = new CallDrafts();
    const s = { id: null as string | null, model: null as string | null, usage: null as unknown, finishReason: null as string | null, texted: false };
    const sse = new SseFrames(response.headers, openaiFrames, this.idle);
    // A frame dropped as carrying nothing (`false`) is no progress for the stream's deadline.
    await eachFrame<unknown>(response, sse, signal, (chunk) => {
      if (!isObject(chunk)) return false;
      if (isObject(chunk.usage)) s.usage = chunk.usage;
      const choices = chunk.choices;
      if (!Array.isArray(choices)) {
        const text = customText ? customFrameText(chunk) : undefined;
        if (text) {
          s.texted = true;
          onText(text);
        }
        return Boolean(text) || isObject(chunk.usage);
      }
      if (s.id === null && typeof chunk.id === 'string') s.id = chunk.id;
      if (s.model === null && typeof chunk.model === 'string') s.model = chunk.model;
      const choice = choices[0]; // undefined on the include_usage chunk
      if (!isObject(choice)) return;
      const delta = choice.delta;
      if (isObject(delta)) {
        const text = delta.content;
        if (typeof text === 'string' && text) {
          s.texted = true;
          keepText?.push(text);
          onText(text);
        }
        if (tools && Array.isArray(delta.tool_calls)) {
          if (drafts.all.length === 0 && delta.tool_calls.length > 0) onHint('tool_call');
          drafts.add(delta.tool_calls);
        }
      }
      if (typeof choice.finish_reason === 'string') {
        s.finishReason = choice.finish_reason;
        // The choice is over without a call; the usage chunk and [DONE] may still be on their way.
        if (drafts.all.length === 0 && s.finishReason !== 'tool_calls') onHint('text_end');
      }
    });
    // [DONE] is not a chunk, so a finish_reason is the only proof the stream was not cut.
    if (s.finishReason === null) throw truncatedStream(this.name, sse);
    checkFinish(this.name, s.finishReason, tools ? drafts.all.length : 0, s.texted);
    const toolCalls = this.finishCalls(drafts.all, keepText ? keepText.join('') : null);
    const { id, model, usage, finishReason } = s;
    return { toolCalls, usage: toUsage(usage), finishReason, raw: { id, model, finishReason, usage } };
  }
}

/**
 * Tool-call fragments by `index`: id and name come on a call's first fragment, argument pieces
 * concatenate. Some compatible servers (Ollama, LiteLLM, Gemini's endpoint) give every parallel call
 * index 0, so a fragment that begins a call (it has a name) under another id than the call open at its
 * index begins a new call; a nameless one continues the open call whatever id it carries.
 */
class CallDrafts {
  /** In the order the calls began. */
  readonly all: CallDraft[] = [];
  private readonly open = new Map<number, CallDraft>();

  add(fragments: unknown[]): void {
    for (const f of fragments) {
      if (!isObject(f)) continue;
      const index = typeof f.index === 'number' ? f.index : this.all.length;
      const id = typeof f.id === 'string' ? f.id : '';
      const fn = f.function;
      const name = isObject(fn) && typeof fn.name === 'string' ? fn.name : '';
      let draft = this.open.get(index);
      if (!draft || (id && name && draft.id && id !== draft.id)) {
        draft = { id: '', name: '', args: '' };
        this.open.set(index, draft);
        this.all.push(draft);
      }
      if (id && !draft.id) draft.id = id;
      if (!isObject(fn)) continue;
      if (name && !draft.name) draft.name = name;
      if (typeof fn.arguments === 'string') draft.args += fn.arguments;
    }
  }
}
