// The OpenAPI entries of the OpenAI-compatible API (`/openai/v1`). Its bodies are OpenAI's own, documented
// by the schemas the routes validate with; its errors are OpenAI's envelope (the OpenAIError component).
import { z } from 'zod';
import type { OperationDoc } from '../openapi/operations.ts';
import { named } from '../openapi/resources.ts';
import { chatCompletionSchema } from './chat-request.ts';
import { createResponseSchema } from './responses-request.ts';

export const openaiErrorBody = named(
  'OpenAIError',
  z.object({ error: z.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string().nullable() }) }),
  "Every error of /openai/v1: OpenAI's envelope. 409, and 429 for a spent daily budget, carry `x-should-retry: false`; a 429 for active runs and every 503 carry `retry-after` and `retry-after-ms`.",
);

const model = named('OpenAIModel', z.object({ id: z.string().meta({ description: 'provider/model' }), object: z.literal('model'), created: z.int(), owned_by: z.string() }));

const chatRequest = named('OpenAIChatCompletionRequest', chatCompletionSchema.loose());
const responseRequest = named('OpenAIResponseRequest', createResponseSchema.loose());
const response = named(
  'OpenAIResponse',
  z.object({ id: z.string(), object: z.literal('response'), status: z.enum(['queued', 'in_progress', 'completed', 'failed', 'cancelled', 'incomplete']), chat_id: z.string().optional() }).loose(),
);

const RUN_ERRORS = {
  404: 'the model is not served here',
  409: 'the conversation has a run going (x-should-retry: false)',
  429: 'too many active runs for this user (retry-after, retry-after-ms), or daily token budget exhausted (x-should-retry: false)',
  503: 'draining, overloaded or at capacity (retry-after, retry-after-ms)',
};

export const openaiOperations: Record<string, OperationDoc> = {
  'GET /openai/v1/models': {
    tag: 'openai',
    summary: 'OpenAI-compatible: every model of every enabled provider, id provider/model',
    ok: { json: z.object({ object: z.literal('list'), data: z.array(model) }) },
  },
  'GET /openai/v1/models/:id': {
    tag: 'openai',
    summary: 'OpenAI-compatible: one model (its id with the slash encoded, or a bare model id one provider lists)',
    ok: { json: model },
  },
  'GET /openai/v1/models/:provider/:model': {
    tag: 'openai',
    summary: 'OpenAI-compatible: one model, its id with the slash as it is',
    ok: { json: model },
  },
  'POST /openai/v1/chat/completions': {
    tag: 'openai',
    summary: 'OpenAI-compatible Chat Completions, whole or streamed (stream: true)',
    description:
      '`model` is provider/model or a bare model id one provider lists. Client function `tools` end a round with `finish_reason: "tool_calls"`; ' +
      'the service\'s own tools run only when `service_tools` names them. `store: true` keeps the exchange as a chat of the caller (`chat_id`).',
    body: chatRequest,
    ok: { json: z.object({ id: z.string(), object: z.literal('chat.completion'), chat_id: z.string().optional() }).loose() },
    errors: RUN_ERRORS,
  },
  'POST /openai/v1/responses': {
    tag: 'openai',
    summary: 'OpenAI-compatible Responses: whole, streamed (stream: true) or in the background (background: true)',
    description:
      'A stored response (`store`, default true) is a turn of a chat of the caller (`chat_id`): `previous_response_id` naming the chat\'s latest ' +
      'response continues it, an earlier one starts a new chat with the history up to it. Streamed events carry `type` and `sequence_number` from 0.',
    body: responseRequest,
    ok: { json: response },
    errors: { ...RUN_ERRORS, 404: 'the model is not served here, or previous_response_id names no response of the caller' },
  },
  'GET /openai/v1/responses/:id': {
    tag: 'openai',
    summary: 'A stored response as it stands; with stream=true its events after starting_after (replayed, then live; after the end, from what was stored)',
    query: {
      stream: { description: 'true: the events as SSE', schema: z.enum(['true', 'false']) },
      starting_after: { description: 'with stream=true: only the events numbered after this', schema: z.int().min(0) },
    },
    ok: { json: response },
  },
  'POST /openai/v1/responses/:id/cancel': {
    tag: 'openai',
    summary: 'Stops a running response (idempotent); answers it with status cancelled (or its status, had it ended before)',
    ok: { json: response },
  },
};
