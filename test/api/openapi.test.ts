// GET /v1/openapi.json: a valid OpenAPI 3.1 document (checked by a real validator) that documents
// EVERY route of the running server's router, and nothing that is not a route, so the two cannot
// drift: a new route without an entry in src/openapi/operations.ts fails here. Its request bodies
// are the zod schemas the routes validate with, so what the document accepts the server accepts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { openApiDocument, openApiPath, routeKey } from '../../src/openapi/document.ts';
import { openaiOperations } from '../../src/openai/openapi.ts';
import { operations } from '../../src/openapi/operations.ts';
import { startTestServer, waitFor, type TestServer } from '../helpers/server.ts';
import { gateName } from '../helpers/wait.ts';

const TOKEN = 'openapi-test-token';

describe('the OpenAPI document', () => {
  let t: TestServer;
  let doc: any;
  before(async () => {
    t = await startTestServer({ env: { ADMIN_TOKEN: TOKEN } });
    const res = await t.call('GET', '/v1/openapi.json');
    assert.equal(res.status, 200, 'public: served without the token');
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    doc = res.body;
  });
  after(() => t.close());

  it('is valid OpenAPI 3.1 per @seriousme/openapi-schema-validator', async () => {
    assert.equal(doc.openapi, '3.1.0');
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    assert.deepEqual(result.errors ?? [], [], 'no validation errors');
    assert.equal(result.valid, true);
    // Every $ref points at a schema that is there.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    assert.ok(refs.length > 20);
    for (const r of new Set(refs)) assert.ok(doc.components.schemas[r], `components.schemas.${r} exists`);
  });

  it('documents every route of the router, and only those', () => {
    const routes = t.server.routes;
    assert.ok(routes.length >= 25, `the router has ${routes.length} routes`);
    const missing = routes.filter((r) => !doc.paths[openApiPath(r.path)]?.[r.method.toLowerCase()]).map(routeKey);
    assert.deepEqual(missing, [], 'routes missing from the document: add them to src/openapi/operations.ts');
    const keys = new Set(routes.map(routeKey));
    const stale = Object.keys({ ...operations, ...openaiOperations }).filter((k) => !keys.has(k));
    assert.deepEqual(stale, [], 'entries of src/openapi/operations.ts that are no route');
    let documented = 0;
    for (const methods of Object.values<Record<string, unknown>>(doc.paths)) documented += Object.keys(methods).length;
    assert.equal(documented, routes.length);
  });

  it('leaves out a route that has no entry, which the check above then reports', () => {
    const extra = { method: 'GET' as const, path: '/v1/undocumented', handler: () => {} };
    const built = openApiDocument([...t.server.routes, extra]);
    assert.equal(built.paths['/v1/undocumented'], undefined);
  });

  it('is served the same under /api', async () => {
    const again = await t.call('GET', '/api/v1/openapi.json');
    assert.equal(again.status, 200);
    assert.deepEqual(again.body, doc);
  });

  it('marks public routes and the others (bearer token, 401)', () => {
    assert.deepEqual(doc.paths['/health'].get.security, []);
    assert.deepEqual(doc.paths['/v1/openapi.json'].get.security, []);
    assert.equal(doc.paths['/v1/chats'].get.security, undefined, 'the global bearer requirement applies');
    assert.ok(doc.paths['/v1/chats'].get.responses['401']);
    assert.equal(doc.paths['/health'].get.responses['401'], undefined);
    assert.equal(doc.components.securitySchemes.bearerAuth.scheme, 'bearer');
  });

  it('uses the validating zod schemas for request bodies, with parameters and the error shape', () => {
    const op = doc.paths['/v1/chat-completions'].post;
    const body = doc.components.schemas[op.requestBody.content['application/json'].schema.$ref.split('/').pop()];
    assert.deepEqual([...body.required].sort(), ['messages', 'model', 'provider']);
    assert.deepEqual(body.properties.provider.enum, ['provider_a', 'provider_b', 'provider_c', 'provider_d']);
    assert.equal(body.properties.messages.minItems, 1);
    assert.equal(op.requestBody.required, true);
    for (const status of ['400', '413', '415', '409', '502']) assert.ok(op.responses[status], `documents ${status}`);
    assert.equal(op.responses['400'].content['application/json'].schema.$ref, '#/components/schemas/Error');
    assert.deepEqual(doc.components.schemas.Error.required, ['message']);
    // A body of optional fields may be left out, as the server accepts.
    assert.equal(doc.paths['/v1/searches'].post.requestBody.required, false);

    const attach = doc.paths['/v1/chats/{chatId}/stream/attach'].post;
    assert.deepEqual(attach.parameters, [{ name: 'chatId', in: 'path', required: true, schema: { type: 'string' } }]);
    assert.equal(attach.requestBody, undefined);
  });

  it('describes the SSE events of each stream: names and data schemas', () => {
    const stream = doc.paths['/v1/chat-completions/stream'].post.responses['200'].content['text/event-stream'].schema;
    const events = doc.components.schemas[stream.$ref.split('/').pop()];
    const byName = Object.fromEntries(events.anyOf.map((v: any) => [v.properties.event.const, v.properties.data.$ref]));
    assert.deepEqual(Object.keys(byName).sort(), ['delta', 'done', 'error', 'meta', 'tool_call']);
    const done = doc.components.schemas[byName.done.split('/').pop()];
    assert.deepEqual([...done.required].sort(), ['text', 'type']);
    const toolCall = doc.components.schemas[byName.tool_call.split('/').pop()];
    assert.deepEqual(toolCall.properties.status.enum, ['initiated', 'completed', 'failed']);

    const search = doc.paths['/v1/searches/{searchId}/run/stream'].post.responses['200'].content['text/event-stream'].schema;
    const searchEvents = doc.components.schemas[search.$ref.split('/').pop()];
    const names = searchEvents.anyOf.map((v: any) => v.properties.event.const).sort();
    assert.deepEqual(names, ['answer', 'answer_error', 'done', 'error', 'search_error', 'search_results']);
    assert.match(doc.info.description, /: ping/, 'says that streams carry comments to skip');
  });

  it('describes what the server really answers (a created chat matches ChatSummary)', async () => {
    const created = await t.call('POST', '/v1/chats', { title: 'shape' }, { authorization: `Bearer ${TOKEN}` });
    assert.equal(created.status, 200);
    const summary = doc.components.schemas.ChatSummary;
    assert.deepEqual(Object.keys(created.body.chat).sort(), Object.keys(summary.properties).sort());
    assert.deepEqual([...summary.required].sort(), Object.keys(summary.properties).sort());
  });

  it('documents the success status each route really answers with (201 for what POST creates)', async () => {
    const asAdmin = (method: string, path: string, body?: unknown) => t.call(method, path, body, { authorization: `Bearer ${TOKEN}` });
    const documented = (method: string, path: string) => {
      const statuses = Object.keys(doc.paths[openApiPath(path)][method.toLowerCase()].responses).filter((s) => /^2\d\d$/.test(s));
      assert.equal(statuses.length, 1, `${method} ${path} documents one success status`);
      return Number(statuses[0]);
    };
    const created = await asAdmin('POST', '/v1/users', { name: 'documented' });
    const userId: string = created.body.user.id;
    const answered: Array<[string, string, number]> = [
      ['POST', '/v1/users', created.status],
      ['POST', '/v1/users/:userId/keys', (await asAdmin('POST', `/v1/users/${userId}/keys`)).status],
      ['GET', '/v1/users/:userId', (await asAdmin('GET', `/v1/users/${userId}`)).status],
      ['POST', '/v1/chats', (await asAdmin('POST', '/v1/chats', {})).status],
    ];
    for (const [method, path, status] of answered) assert.equal(documented(method, path), status, `${method} ${path}`);
    assert.deepEqual(answered.map((a) => a[2]), [201, 201, 200, 200]);
  });

  it('documents the 409 of a whole search run that is stopped while the request waits', async () => {
    const asAdmin = (method: string, path: string, body?: unknown) => t.call(method, path, body, { authorization: `Bearer ${TOKEN}` });
    // The answer is held at a gate nobody opens, so the run is still going when the stop lands.
    const query = `kelp forests SIM ${JSON.stringify({ answerGate: gateName() })}`;
    const search = (await asAdmin('POST', '/v1/searches', { query })).body.search;
    const waiting = asAdmin('POST', `/v1/searches/${search.id}/run`, {});
    await waitFor(async () => (await asAdmin('GET', '/v1/active-runs')).body.searches.includes(search.id), 10_000, 'the run to be active');
    assert.equal((await asAdmin('POST', `/v1/searches/${search.id}/run/stop`)).status, 200);
    const answered = await waiting;
    assert.deepEqual([answered.status, answered.body], [409, { message: 'search run stopped' }]);
    const responses = doc.paths['/v1/searches/{searchId}/run'].post.responses;
    assert.ok(responses['409'], `409 is documented (documented: ${Object.keys(responses).join(', ')})`);
  });
});
