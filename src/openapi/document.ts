// Builds the OpenAPI 3.1 document from the router's own route table and the operations catalogue
// (operations.ts), with zod 4's JSON Schema output for every schema. Built once at start; a route
// without a catalogue entry is left out, which test/api/openapi.test.ts reports.
import { z } from 'zod';
import { CORS_EXPOSE_HEADERS } from '../http/cors.ts';
import type { Route } from '../http/router.ts';
import { openaiOperations } from '../openai/openapi.ts';
import { operations, type OperationDoc, type SuccessStatus } from './operations.ts';

/** The spec's operations and the OpenAI-compatible API's. */
const catalogue: Record<string, OperationDoc> = { ...operations, ...openaiOperations };
import { components, errorBody } from './resources.ts';

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> };

const REF = (id: string) => `#/components/schemas/${id}`;

/** `/v1/chats/:chatId` → `/v1/chats/{chatId}`. */
export const openApiPath = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
export const routeKey = (route: Pick<Route, 'method' | 'path'>) => `${route.method} ${route.path}`;

/** `POST /v1/chats/:chatId/stream/attach` → `postV1ChatsChatIdStreamAttach`. */
function operationId(method: string, path: string): string {
  const words = path.split(/[^A-Za-z0-9]+/).filter(Boolean);
  return method.toLowerCase() + words.map((w) => w[0]!.toUpperCase() + w.slice(1)).join('');
}

const DESCRIPTION = `The conversation and search service.

- **Paths** work at the server root and under \`/api\` (see \`servers\`). \`HEAD\` is answered wherever \`GET\` is.
- **Auth**: with \`ADMIN_TOKEN\` set, every route but the public ones (\`security: []\`) needs \`Authorization: Bearer <token>\`; without it the API is open.
- **Errors** are \`{"message": "…"}\` (schema \`Error\`) with a 4xx or 5xx status. A \`503\` from a full or stopping process, or while the database or Redis is out of reach (\`database unavailable: …\`), carries \`Retry-After\`: retry it.
- **Streams** are \`text/event-stream\`. Each message has an \`event:\` line and one \`data:\` line of JSON; the schemas below describe
  each message as \`{event, data}\`. The stream also carries SSE comments (\`: open\` at the start, \`: ping\` heartbeats): skip
  them, do not parse them as JSON. Ignore unknown event names.
- **CORS**: with \`CORS_ORIGINS\` set, allowed origins get \`Access-Control-Allow-Origin\` and may read ${CORS_EXPOSE_HEADERS}.`;

interface Builder {
  registry: z.core.$ZodRegistry<{ id: string }>;
  ids: Map<z.ZodType, string>;
  /** Request bodies, marked required once their schemas are emitted (a body of optional fields may be left out). */
  bodies: Array<{ requestBody: Record<string, unknown>; id: string }>;
}

/** The `$ref` of `schema`, naming it `fallbackId` when it is not a named component yet. */
function ref(b: Builder, schema: z.ZodType, fallbackId: string): { $ref: string } {
  let id = b.ids.get(schema);
  if (id === undefined) {
    id = fallbackId;
    b.ids.set(schema, id);
    b.registry.add(schema, { id });
  }
  return { $ref: REF(id) };
}

const SUCCESS_DESCRIPTIONS: Record<SuccessStatus, string> = { 200: 'OK', 201: 'Created' };

function okResponse(b: Builder, doc: OperationDoc, id: string): Record<string, unknown> {
  const ok = doc.ok;
  if ('json' in ok) return { description: SUCCESS_DESCRIPTIONS[doc.status ?? 200], content: { 'application/json': { schema: ref(b, ok.json, `${id}Response`) } } };
  if ('sse' in ok) {
    const eventNames = ok.sse.events.map((e) => `\`${e}\``).join(', ');
    return {
      description: `Server-Sent Events (${eventNames}): ${ok.description}.`,
      content: { 'text/event-stream': { schema: ref(b, ok.sse.message, `${id}Message`) } },
    };
  }
  return { description: ok.description, content: { [ok.content]: { schema: { type: 'string' } } } };
}

/** `envelope`: the component of the path's errors (the OpenAI-compatible API has OpenAI's). */
function errorResponse(description: string, envelope = 'Error') {
  return { description, content: { 'application/json': { schema: { $ref: REF(envelope) } } } };
}

function operation(b: Builder, route: Route, doc: OperationDoc): Record<string, unknown> {
  const id = operationId(route.method, route.path);
  const pathParams = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
  const parameters: unknown[] = pathParams.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  for (const [name, q] of Object.entries(doc.query ?? {})) {
    parameters.push({ name, in: 'query', required: false, description: q.description, schema: z.toJSONSchema(q.schema, { io: 'input' }) });
  }
  for (const [name, h] of Object.entries(doc.headers ?? {})) {
    parameters.push({ name, in: 'header', required: false, description: h.description, schema: z.toJSONSchema(h.schema, { io: 'input' }) });
  }

  const errors: Record<number, string> = {};
  if (doc.body) {
    errors[400] = 'invalid body: the message names each bad field';
    errors[413] = 'body over the size limit';
    errors[415] = 'content-type is not application/json';
  }
  if (pathParams.length > 0) errors[404] = 'not found';
  if (!route.public) errors[401] = 'missing or wrong token (token mode)';
  Object.assign(errors, doc.errors);
  const responses: Record<string, unknown> = { [doc.status ?? 200]: okResponse(b, doc, id) };
  const envelope = route.path.startsWith('/openai/') ? 'OpenAIError' : 'Error';
  for (const [status, why] of Object.entries(errors)) responses[status] = errorResponse(why, envelope);
  responses.default = errorResponse('an unexpected failure (500)', envelope);

  const op: Record<string, unknown> = { operationId: id, tags: [doc.tag], summary: doc.summary };
  if (doc.description) op.description = doc.description;
  if (route.public) op.security = [];
  if (parameters.length > 0) op.parameters = parameters;
  if (doc.body) {
    const schema = ref(b, doc.body, `${id}Request`);
    op.requestBody = { content: { 'application/json': { schema } } };
    b.bodies.push({ requestBody: op.requestBody as Record<string, unknown>, id: schema.$ref.slice(REF('').length) });
  }
  op.responses = responses;
  return op;
}

/** The document for `routes`: every route with an entry in `operations`, all schemas under components. */
export function openApiDocument(routes: readonly Route[], operations: Record<string, OperationDoc> = catalogue): OpenApiDocument {
  const b: Builder = { registry: z.registry<{ id: string }>(), ids: new Map(), bodies: [] };
  for (const [id, schema] of components) {
    b.registry.add(schema, { id });
    b.ids.set(schema, id);
  }
  if (!b.ids.has(errorBody)) throw new Error('the Error component is missing');

  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  for (const route of routes) {
    const doc = operations[routeKey(route)];
    if (!doc) continue;
    tags.add(doc.tag);
    (paths[openApiPath(route.path)] ??= {})[route.method.toLowerCase()] = operation(b, route, doc);
  }

  const { schemas } = z.toJSONSchema(b.registry, { io: 'input', uri: REF, unrepresentable: 'any' });
  for (const schema of Object.values(schemas)) {
    delete (schema as Record<string, unknown>).$schema;
    delete (schema as Record<string, unknown>).$id;
  }
  for (const { requestBody, id } of b.bodies) {
    const required = (schemas[id] as { required?: string[] }).required;
    requestBody.required = required !== undefined && required.length > 0;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'Conversation and search service', version: '1.0.0', description: DESCRIPTION },
    servers: [{ url: '/' }, { url: '/api', description: 'the same API behind a web proxy prefix' }],
    security: [{ bearerAuth: [] }, {}],
    tags: [...tags].map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN; required only when the server sets it' },
      },
      schemas,
    },
  };
}
