// POST /openai/v1/responses, GET /openai/v1/responses/{id} (?stream=true&starting_after=N) and
// POST /openai/v1/responses/{id}/cancel: OpenAI's Responses on the service's chat runs. A stored response is
// a turn of a chat of its owner; its run is that chat's run (one per chat), found again by the chat's key on
// any instance, and its end is written by the instance that started it.
import { randomUUID } from 'node:crypto';
import type { ChatRunRequest, ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { AppContext } from '../service/context.ts';
import { readFingerprintedJson, readJson } from '../http/body.ts';
import { IDEMPOTENCY_KEY_HEADER, idempotencyKeyOf } from '../http/idempotency.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { MESSAGE_BODY_LIMIT } from '../routes/chats.ts';
import type { RunMessage } from '../domain/schemas.ts';
import { createChat } from '../store/chats.ts';
import { invalidParam, RESPONSE_NOT_FOUND } from './errors.ts';
import { resolveModel, type ResolvedModel } from './models.ts';
import { counted } from './requests.ts';
import { ResponseEventStream, responseObject, storedObject, type ResponseBase } from './response-events.ts';
import { createResponseSchema, inputMessages, requestEcho, toolsOf, type CreateResponseBody } from './responses-request.ts';
import { whileConnected } from '../routes/completions.ts';
import { samplingOf } from './sampling.ts';
import { startChatRun } from './start.ts';
import { currentResponse, streamResponse } from './response-reads.ts';
import { claimResponseKey, recordResponseKey, withKey } from './responses-keyed.ts';
import type { ResponseEnds } from './response-ends.ts';
import { endOfResult, storedEndOf } from './run-ends.ts';
import { finishResponse, getResponse, insertResponse, isGoing, latestOfChat, responseChain, type StoredResponse } from './store.ts';

/** The history a continuation sends: each earlier turn's input, then its answer (with the calls it handed over). */
function historyOf(chain: StoredResponse[]): RunMessage[] {
  const out: RunMessage[] = [...(chain[0]?.inherited ?? [])];
  for (const turn of chain) {
    for (const m of turn.input) if (m.role !== 'system') out.push(m);
    const answer: RunMessage = { role: 'assistant', content: turn.outputText ?? '' };
    if (turn.toolCalls) answer.toolCalls = turn.toolCalls;
    out.push(answer);
  }
  return out;
}

interface Conversation {
  chatId: string | null;
  createChat: boolean;
  history: RunMessage[];
  /** A new chat from an earlier turn: the history it starts with (kept on the response: StoredResponse.inherited). */
  inherited: RunMessage[] | null;
}

export function responseRoutes(app: AppContext, ends: ResponseEnds): Route[] {
  const { pool } = app;

  /**
   * Where the response goes: a new chat (stored, no previous), the chat of `previous_response_id` when that
   * is its latest response, or a new chat holding the history up to it when it is an earlier one.
   */
  async function conversationOf(body: CreateResponseBody, owner: string, store: boolean, model: ResolvedModel): Promise<Conversation> {
    const previous = body.previous_response_id;
    if (!previous) return { chatId: store ? randomUUID() : null, createChat: store, history: [], inherited: null };
    let chain = await responseChain(pool, previous, owner);
    if (chain.length === 0 || chain.at(-1)!.id !== previous) throw Object.assign(RESPONSE_NOT_FOUND(previous), { param: 'previous_response_id' });
    // Its run has just ended and its end is being written (its answer is this turn's history), or it still
    // runs: then this turn's start on its chat is the 409 of one run per chat.
    if (isGoing(chain.at(-1)!) && !isGoing(await currentResponse(app, ends, previous, owner))) chain = await responseChain(pool, previous, owner);
    const history = historyOf(chain);
    const last = chain.at(-1)!;
    if (!store) return { chatId: null, createChat: false, history, inherited: null };
    if ((await latestOfChat(pool, last.chatId)) === previous) return { chatId: last.chatId, createChat: false, history, inherited: null };
    // An earlier turn: a new chat holding the history up to it (the answers too), which the run then continues.
    const chat = await createChat(pool, {
      provider: model.provider,
      model: model.model,
      enabledTools: [],
      messages: history.map((m) => ({ role: m.role, content: m.content, name: null, metadata: m.toolCalls ? { toolCalls: m.toolCalls } : null })),
      owner,
    });
    return { chatId: chat.id, createChat: false, history, inherited: history };
  }

  async function create(req: Req, reply: Reply) {
    const key = idempotencyKeyOf(req);
    const { body, fingerprint } = key ? await readFingerprintedJson(req, createResponseSchema) : { body: await readJson(req, createResponseSchema), fingerprint: '' };
    const model = resolveModel(app, body.model);
    const store = body.store !== false;
    if (body.background && !store) throw invalidParam('background', 'background responses must be stored: remove store: false');
    if (key && !store) throw invalidParam('store', 'Idempotency-Key needs a stored response: an unstored one cannot be answered again');
    const owner = req.caller.userId;
    const input = inputMessages(body);
    const { clientTools, serviceTools } = toolsOf(body);
    const callId = randomUUID();
    const claimed = await claimResponseKey(app, ends, key, fingerprint, body, callId, owner, reply);
    if (!claimed.start) return;
    const { keyed } = claimed;
    const conversation = await withKey(app, keyed, () => conversationOf(body, owner, store, model));
    const id = `resp_${randomUUID().replaceAll('-', '')}`;
    const messages: RunMessage[] = [...conversation.history, ...input];
    const streamed = body.stream === true || body.background === true;
    const request: ChatRunRequest = {
      mode: streamed ? 'stream' : 'whole',
      chatId: conversation.chatId,
      createChat: conversation.createChat,
      storeChat: conversation.chatId !== null,
      callId,
      owner,
      provider: model.provider,
      model: model.model,
      messages,
      // Instructions are the turn's system prompt, not a message of the chat (nor inherited by the next turn).
      additionalSystemPrompt: body.instructions ?? null,
      enabledTools: serviceTools,
      keepDeltas: true,
      ...(body.temperature != null && { temperature: body.temperature }),
      ...samplingOf(body, model),
      ...(body.max_output_tokens != null && { maxTokens: body.max_output_tokens }),
      ...(clientTools && { clientTools }),
    };
    const echo = requestEcho(body, model.id);
    const base: ResponseBase = { id, createdAt: Math.floor(Date.now() / 1000), request: echo, previousResponseId: body.previous_response_id ?? null, store, chatId: conversation.chatId };
    const sink = body.stream ? app.sse.create(reply) : null;
    const events = sink ? new ResponseEventStream(sink, base) : undefined;
    // An unstored response nobody can read again: it ends with its client. A stored one goes on (resume by id).
    const subscriber = events ?? (!store ? whileConnected(reply) : undefined);
    const run = await withKey(app, keyed, () => startChatRun(app, req.caller, request, subscriber, !store));
    const recorded = store ? record(id, owner, conversation, callId, base, input, run.result) : null;
    if (events && recorded) events.holdEndUntil(recorded.finished);
    // After the response's end is stored: a retry woken by the key then reads it ended.
    recordResponseKey(app, keyed, id, recorded ? recorded.finished.then(() => run.result, () => run.result) : run.result);
    if (sink) return sink.open();
    if (body.background) {
      await recorded!.inserted;
      // `queued`, as OpenAI answers a background response: its run's start is stored beside this answer, and a
      // read says `in_progress` once it is (store.ts, queuedOf), never `queued` again.
      return reply.json(200, responseObject(base, null, true));
    }
    const result = await run.result;
    if (!result.ok) throw outcomeError(result);
    await recorded?.finished;
    reply.json(200, responseObject(base, endOfResult(result)));
  }

  /** The row of a stored response, then its end once the run's result is known (written by this instance). */
  function record(id: string, owner: string, conversation: Conversation, callId: string, base: ResponseBase, input: RunMessage[], result: Promise<RunResult<ChatRunValue>>) {
    const { chatId, inherited } = conversation;
    const inserted = insertResponse(pool, { id, owner, chatId: chatId!, callId, instanceId: app.config.instanceId, previousResponseId: base.previousResponseId, input, inherited, request: base.request });
    const finished = inserted
      .then(() => result)
      .then((r) => finishResponse(pool, id, storedEndOf(r)))
      .then(() => ends.written(id));
    finished.catch((err: unknown) => app.log.error({ err, responseId: id }, 'the end of an OpenAI response could not be stored'));
    return { inserted, finished };
  }

  async function retrieve(req: Req, reply: Reply) {
    const stored = await currentResponse(app, ends, req.params.id!, req.caller.userId);
    if (req.query.get('stream') !== 'true') return reply.json(200, storedObject(stored));
    const after = req.query.get('starting_after');
    const startingAfter = after === null ? -1 : Number(after);
    if (!Number.isInteger(startingAfter) || startingAfter < -1) throw invalidParam('starting_after', 'starting_after must be a whole number ≥ 0');
    await streamResponse(app, ends, stored, startingAfter, reply, req.caller.userId);
  }

  async function cancel(req: Req, reply: Reply) {
    const owner = req.caller.userId;
    const stored = await currentResponse(app, ends, req.params.id!, owner);
    if (!isGoing(stored)) return reply.json(200, storedObject(stored));
    // The instance that runs it, here or elsewhere, writes its end once the stop has ended it (at once) and
    // announces it: waited for from before the stop, so that it cannot be missed.
    const end = ends.wait(stored.id, CANCEL_WAIT_MS);
    try {
      await app.runs.stop('chat', stored.chatId);
      let now = (await getResponse(pool, stored.id, owner)) ?? stored;
      if (isGoing(now) && (await end.heard)) now = (await getResponse(pool, stored.id, owner)) ?? now;
      reply.json(200, storedObject(now));
    } finally {
      end.stop();
    }
  }

  return [
    { method: 'POST', path: '/openai/v1/responses', bodyLimit: MESSAGE_BODY_LIMIT, headers: [IDEMPOTENCY_KEY_HEADER], handler: counted(app, 'responses', create) },
    { method: 'GET', path: '/openai/v1/responses/:id', handler: counted(app, 'responses', retrieve) },
    { method: 'POST', path: '/openai/v1/responses/:id/cancel', handler: counted(app, 'responses', cancel) },
  ];
}

/** How long a cancel waits for the end of the run it stopped to be written. */
const CANCEL_WAIT_MS = 5000;
