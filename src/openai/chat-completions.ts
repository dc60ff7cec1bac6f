// POST /openai/v1/chat/completions: OpenAI's Chat Completions on the service's runs, whole or streamed
// (bare `data:` chunks, `data: [DONE]`). `store: true` keeps the exchange as a chat of the caller.
import { randomUUID } from 'node:crypto';
import type { ChatRunRequest, ChatRunValue } from '../../actors/chat-run.ts';
import type { AppContext } from '../service/context.ts';
import { readFingerprintedJson, readJson } from '../http/body.ts';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf } from '../http/idempotency.ts';
import { claimKey, releaseKey } from '../service/idempotent-start.ts';
import { keyedRequest } from '../routes/idempotent-replay.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { recordChatKey, replayChat } from './chat-keyed.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import type { SseSink } from '../http/sse.ts';
import type { ToolCallRequest, Usage } from '../providers/types.ts';
import { MESSAGE_BODY_LIMIT } from '../routes/chats.ts';
import { chatCompletionSchema, clientTools, runMessages, type ChatCompletionBody } from './chat-request.ts';
import { streamErrorBody } from './errors.ts';
import { resolveModel, type ResolvedModel } from './models.ts';
import { FrameTranslator } from './native-frames.ts';
import { counted } from './requests.ts';
import { samplingOf } from './sampling.ts';
import { whileConnected } from '../routes/completions.ts';
import { startChatRun } from './start.ts';

const nowSeconds = () => Math.floor(Date.now() / 1000);

export const chatUsage = (u: Usage | null | undefined) =>
  u ? { prompt_tokens: u.inputTokens, completion_tokens: u.outputTokens, total_tokens: u.totalTokens } : { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

const toolCallsOf = (calls: ToolCallRequest[]) => calls.map((c) => ({ id: c.callId, type: 'function' as const, function: { name: c.name, arguments: c.arguments } }));

/** The run of a request: its chat when stored, its LlmCall always (usage and budgets count it). */
function runRequest(body: ChatCompletionBody, model: ResolvedModel, owner: string, mode: 'stream' | 'whole'): ChatRunRequest {
  const chatId = body.store ? randomUUID() : null;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const tools = clientTools(body.tools);
  return {
    mode,
    chatId,
    createChat: chatId !== null,
    storeChat: chatId !== null,
    callId: randomUUID(),
    owner,
    provider: model.provider,
    model: model.model,
    messages: runMessages(body),
    // An OpenAI client expects no hidden tools: the service's run only when named.
    enabledTools: body.service_tools ?? [],
    ...(body.temperature != null && { temperature: body.temperature }),
    ...samplingOf(body, model),
    ...(maxTokens !== undefined && { maxTokens }),
    ...(tools && { clientTools: tools }),
  };
}

/** The whole answer, as OpenAI's `chat.completion`. */
function completionOf(id: string, model: string, value: ChatRunValue): Record<string, unknown> {
  const calls = value.toolCalls;
  const message: Record<string, unknown> = { role: 'assistant', content: calls && value.text === '' ? null : value.text, refusal: null };
  if (calls) message.tool_calls = toolCallsOf(calls);
  const out: Record<string, unknown> = {
    id,
    object: 'chat.completion',
    created: nowSeconds(),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: calls ? 'tool_calls' : 'stop' }],
    usage: chatUsage(value.usage),
  };
  if (value.chatId) out.chat_id = value.chatId;
  return out;
}

/**
 * The run's frames as `chat.completion.chunk`s on the client's SSE response. Deltas are spliced in as the
 * JSON literals they are; the first chunk carries the role, the last the finish reason, then the usage
 * chunk (include_usage) and `[DONE]`. A failure after the stream began is `data: {"error":…}`.
 */
export class ChatChunkStream extends FrameTranslator {
  /** `data: {` up to the chunk's choices: the same id, created, model and chat_id on every chunk. */
  private readonly prefix: string;
  private readonly head: string;

  constructor(
    sink: SseSink,
    id: string,
    model: string,
    private readonly includeUsage: boolean,
    chatId: string | null,
  ) {
    super(sink);
    const chat = chatId ? `,"chat_id":${JSON.stringify(chatId)}` : '';
    this.prefix = `data: {"id":${JSON.stringify(id)},"object":"chat.completion.chunk","created":${nowSeconds()},"model":${JSON.stringify(model)}${chat}`;
    this.head = `${this.prefix},"choices":[{"index":0,"delta":`;
  }

  /** Opens the SSE response (the run was not refused). */
  open(): void {
    this.sink.open();
  }

  private choice(delta: string, finish: string | null): string {
    return `${this.head}${delta},"logprobs":null,"finish_reason":${finish === null ? 'null' : `"${finish}"`}}]}\n\n`;
  }

  delta(text: string): void {
    this.sink.write(`${this.head}{"content":${text}},"logprobs":null,"finish_reason":null}]}\n\n`);
  }

  event(event: string, data: Record<string, unknown>): void {
    if (event === 'meta') return this.sink.write(this.choice('{"role":"assistant","content":""}', null));
    if (event === 'done') return this.done(data);
    if (event === 'error') this.sink.write(`data: ${JSON.stringify(streamErrorBody(String(data.message)))}\n\n`);
    // Service tool events (`tool_call`) are the service's business: the client sees only the answer.
  }

  private done(data: Record<string, unknown>): void {
    const calls = data.toolCalls as ToolCallRequest[] | undefined;
    let out = '';
    if (calls) {
      const fragments = calls.map((c, index) => ({ index, id: c.callId, type: 'function', function: { name: c.name, arguments: c.arguments } }));
      out += this.choice(`{"tool_calls":${JSON.stringify(fragments)}}`, null);
    }
    out += this.choice('{}', calls ? 'tool_calls' : 'stop');
    if (this.includeUsage) {
      out += `${this.prefix},"choices":[],"usage":${JSON.stringify(chatUsage(data.usage as Usage | undefined))}}\n\n`;
    }
    this.sink.write(`${out}data: [DONE]\n\n`);
  }
}

export function chatCompletionRoutes(app: AppContext): Route[] {
  async function create(req: Req, reply: Reply) {
    const key = idempotencyKeyOf(req);
    const { body, fingerprint } = key ? await readFingerprintedJson(req, chatCompletionSchema) : { body: await readJson(req, chatCompletionSchema), fingerprint: '' };
    const model = resolveModel(app, body.model);
    const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`;
    const owner = req.caller.userId;
    const request = runRequest(body, model, owner, body.stream ? 'stream' : 'whole');
    const includeUsage = body.stream_options?.include_usage === true;
    const chunksOn = () => new ChatChunkStream(app.sse.create(reply), id, model.id, includeUsage, request.chatId);
    const keyed = key ? keyedRequest(key, body.stream ? 'stream' : 'whole', 'POST /openai/v1/chat/completions', fingerprint, { chatId: request.chatId, callId: request.callId!, owner }) : null;
    if (keyed) {
      const claim = await claimKey(app, keyed);
      if (!claim.start) return replayChat(app, claim.record, reply, owner, body.stream ? chunksOn : null);
    }
    const render = (v: ChatRunValue) => completionOf(id, model.id, v);
    const start = async (subscriber: Subscriber | undefined, cancelWhenAlone: boolean) => {
      const run = await startChatRun(app, req.caller, request, subscriber, cancelWhenAlone).catch(async (err: unknown) => {
        if (keyed) await releaseKey(app, keyed);
        throw err;
      });
      recordChatKey(app, keyed, run.result, render);
      return run;
    };
    if (!body.stream) {
      // Nobody can read an unstored, unkeyed answer once its client has gone: stop paying for it then.
      const unreadable = request.chatId === null && keyed === null;
      const run = await start(unreadable ? whileConnected(reply) : undefined, unreadable);
      const result = await run.result;
      if (!result.ok) throw outcomeError(result);
      return reply.json(200, render(result.value));
    }
    const chunks = chunksOn();
    // A Chat Completions stream goes with its client (a stored one keeps its partial answer, as the spec's
    // stop does), unless a keyed retry may come back for it.
    await start(chunks, keyed === null);
    chunks.open();
  }

  return [{ method: 'POST', path: '/openai/v1/chat/completions', bodyLimit: MESSAGE_BODY_LIMIT, headers: [IDEMPOTENCY_KEY_HEADER], handler: counted(app, 'chat_completions', create) }];
}
