// provider_a: the Responses API through the `openai` SDK. With tools the response is stored so that
// later rounds only send the function_call_output items against `previous_response_id`; reasoning and
// function_call items then stay on the provider's side (spec rule 8). `instructions` and `tools` are
// not inherited through previous_response_id, so every round resends them.
import type OpenAI from 'openai';
import type {
  FunctionTool,
  Response,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  ResponseStreamEvent,
  ResponseUsage,
} from 'openai/resources/responses/responses';
import { responsesParts, toolMessageText, userAttachments } from './attachments.ts';
import { checkWholeBody, toProviderError, truncatedStream } from './errors.ts';
import { createSession, eachFrame, type RoundCalls, type RoundRetry } from './session.ts';
import { idleLimit, openaiFrames, SseFrames, type IdleLimit } from './sse.ts';
import {
  ProviderError,
  type CompletionRequest,
  type HintSink,
  type ProviderAdapter,
  type RoundEnd,
  type TextSink,
  type ToolCallRequest,
  type ToolResultInput,
  type Usage,
} from './types.ts';

const NAME = 'provider_a';

/**
 * Model ids the Responses call cannot serve: embeddings, audio (whisper, tts, audio/realtime/transcribe
 * variants), image generation (dall-e, gpt-image), moderation, legacy completions (babbage, davinci,
 * *-instruct), the search-preview chat models (Chat Completions only), and models that refuse a call
 * without a built-in tool the service never sends (deep-research: web_search_preview, mcp or
 * file_search; computer-use: the computer tool). Everything else is kept, so new text models show up
 * without a code change.
 */
const NOT_RESPONSES = /embed|whisper|tts|audio|realtime|transcri|dall-e|image|moderation|babbage|davinci|instruct|search-preview|sora|deep-research|computer-use/i;

export function isResponsesModel(id: string): boolean {
  return !NOT_RESPONSES.test(id);
}

/** `idleMs` (PROVIDER_TIMEOUT_MS): the longest a stream may go without an event that carries data (eachFrame). */
export function createProviderA(client: OpenAI, { idleMs, retry }: { idleMs?: number; retry?: RoundRetry } = {}): ProviderAdapter {
  const idle = idleLimit(NAME, idleMs);
  return {
    name: NAME,
    startSession: (req) => createSession(NAME, req, new ResponsesRounds(client, req, idle), retry),
    async listModels(signal) {
      try {
        const ids: string[] = [];
        for await (const m of client.models.list({ signal })) if (isResponsesModel(m.id)) ids.push(m.id);
        return ids.sort();
      } catch (err) {
        throw toProviderError(NAME, err, signal);
      }
    },
  };
}

function toUsage(u: ResponseUsage | null | undefined): Usage | null {
  if (!u) return null;
  const inputTokens = u.input_tokens ?? 0;
  const outputTokens = u.output_tokens ?? 0;
  const usage: Usage = { inputTokens, outputTokens, totalTokens: u.total_tokens ?? inputTokens + outputTokens };
  const cached = u.input_tokens_details?.cached_tokens;
  if (cached) usage.cacheReadTokens = cached;
  return usage;
}

function functionCalls(output: Response['output'] | undefined, into: Map<string, ToolCallRequest>): void {
  for (const item of output ?? []) {
    if (item.type === 'function_call' && !into.has(item.call_id)) {
      into.set(item.call_id, { callId: item.call_id, name: item.name, arguments: item.arguments ?? '' });
    }
  }
}

function outputText(response: Response): string {
  let text = '';
  for (const item of response.output ?? []) {
    if (item.type !== 'message') continue;
    for (const part of item.content ?? []) if (part.type === 'output_text') text += part.text;
  }
  return text;
}

/**
 * Throws for responses that produced no usable answer. An `incomplete` response cut by
 * max_output_tokens without function calls is the caller's own limit, so it ends normally (as the
 * Chat Completions `length` finish does) when it has answer text (`texted`); any other incomplete
 * reason, a cut function call, or a limit a reasoning model spent before writing any text, fails.
 */
function finishReason(response: Response, calls: number, texted: boolean): string | null {
  const status = response.status;
  if (status === 'failed') {
    const e = response.error;
    const code = e?.code ? ` (${e.code})` : '';
    throw new ProviderError(`${NAME} response failed${code}: ${e?.message || 'no reason given'}`);
  }
  if (status === 'cancelled') throw new ProviderError(`${NAME} response was cancelled`);
  if (status === 'incomplete') {
    const reason = response.incomplete_details?.reason ?? 'unknown reason';
    if (reason === 'max_output_tokens' && calls === 0) {
      if (!texted) throw new ProviderError(`${NAME} reached the token limit (max_output_tokens) before any answer text`);
      return reason;
    }
    throw new ProviderError(`${NAME} response incomplete: ${reason}`);
  }
  return status ?? null;
}

class ResponsesRounds implements RoundCalls<ResponseCreateParamsNonStreaming> {
  private lastResponseId: string | null = null;
  private readonly instructions: string | undefined;
  private readonly tools: FunctionTool[] | undefined;

  constructor(
    private readonly client: OpenAI,
    private readonly req: CompletionRequest,
    private readonly idle: IdleLimit | undefined,
  ) {
    const system = req.messages.filter((m) => m.role === 'system').map((m) => m.content);
    this.instructions = system.length ? system.join('\n\n') : undefined;
    this.tools = req.tools.length
      ? req.tools.map((t) => ({ type: 'function', name: t.name, description: t.description, parameters: t.parameters, strict: false }))
      : undefined;
  }

  body(toolResults: ToolResultInput[] | null): ResponseCreateParamsNonStreaming {
    const { req } = this;
    let input: ResponseInputItem[];
    if (toolResults) {
      if (!this.lastResponseId) throw new ProviderError(`${NAME}: tool results given before any response`);
      input = toolResults.map((r) => ({ type: 'function_call_output', call_id: r.callId, output: r.output }));
    } else {
      input = [];
      for (const m of req.messages) {
        if (m.role === 'system') continue;
        if (m.role === 'tool') {
          if (m.toolCallId !== undefined) input.push({ type: 'function_call_output', call_id: m.toolCallId, output: m.content });
          else input.push({ role: 'user', content: toolMessageText(m) });
        } else if (m.role === 'assistant') {
          if (m.content || !m.toolCalls?.length) input.push({ role: 'assistant', content: m.content });
          for (const c of m.toolCalls ?? []) input.push({ type: 'function_call', call_id: c.callId, name: c.name, arguments: c.arguments });
        }
        else input.push({ role: 'user', content: responsesParts(m.content, userAttachments(m)) });
      }
    }
    return {
      model: req.model,
      input,
      ...(this.instructions !== undefined && { instructions: this.instructions }),
      ...(this.tools && { tools: this.tools }),
      // Only the tool loop needs the stored response; without tools nothing is kept.
      store: this.tools !== undefined,
      ...(toolResults && { previous_response_id: this.lastResponseId }),
      ...(req.maxTokens !== undefined && { max_output_tokens: req.maxTokens }),
      ...(req.temperature !== undefined && { temperature: req.temperature }),
      ...(req.topP !== undefined && { top_p: req.topP }),
    };
  }

  async whole(body: ResponseCreateParamsNonStreaming, onText: TextSink): Promise<RoundEnd> {
    const response = await this.client.responses.create(body, { signal: this.req.signal });
    // A failed response says why itself (finishReason); anything else without its output is no answer.
    if (response?.status !== 'failed') checkWholeBody(NAME, response, Array.isArray(response?.output), 'output');
    this.lastResponseId = response.id;
    const calls = new Map<string, ToolCallRequest>();
    functionCalls(response.output, calls);
    const text = outputText(response);
    const finish = finishReason(response, calls.size, text !== '');
    if (text) onText(text);
    return { toolCalls: [...calls.values()], usage: toUsage(response.usage), finishReason: finish, raw: response };
  }

  async streamed(body: ResponseCreateParamsNonStreaming, onText: TextSink, onHint: HintSink): Promise<RoundEnd> {
    const { signal } = this.req;
    // The SDK sends the request and throws its typed error for a non-2xx; the body is read here (sse.ts).
    const response = await this.client.responses.create({ ...body, stream: true }, { signal }).asResponse();
    const calls = new Map<string, ToolCallRequest>();
    const seen: { final: Response | null; called: boolean; texted: boolean } = { final: null, called: false, texted: false };
    const sse = new SseFrames(response.headers, openaiFrames, this.idle);
    await eachFrame<ResponseStreamEvent>(response, sse, signal, (ev) => {
      switch (ev.type) {
        case 'response.output_text.delta':
          if (ev.delta) {
            seen.texted = true;
            onText(ev.delta);
          }
          break;
        case 'response.output_item.added':
          if (ev.item?.type === 'function_call' && !seen.called) {
            seen.called = true;
            onHint('tool_call');
          }
          break;
        case 'response.output_item.done':
          if (ev.item?.type === 'function_call') functionCalls([ev.item], calls);
          // The answer's text item is whole. A model may still add a call after it (a "preamble"),
          // which then follows the shown text, as it does when the text outlasts the hold.
          else if (ev.item?.type === 'message' && !seen.called) onHint('text_end');
          break;
        case 'response.completed':
        case 'response.incomplete':
        case 'response.failed':
          seen.final = ev.response;
          break;
        case 'error':
          // The nested form (`error: {…}`) becomes sse.failure (a status-less APIError); this is the flat one.
          throw new ProviderError(`${NAME} stream error${ev.code ? ` (${ev.code})` : ''}: ${ev.message || 'no message'}`);
      }
    });
    const done = seen.final;
    if (!done) throw truncatedStream(NAME, sse);
    this.lastResponseId = done.id;
    functionCalls(done.output, calls);
    const finish = finishReason(done, calls.size, seen.texted);
    const { id, status, model, usage } = done;
    return { toolCalls: [...calls.values()], usage: toUsage(usage), finishReason: finish, raw: { id, status, model, usage } };
  }
}
