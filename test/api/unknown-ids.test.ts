// The spec's 404s through the real lookup: ids shaped like the ones the service issues (UUIDs), so
// they pass the shape check (src/store/values.ts) and reach the database and the run registry. The ids
// that cannot exist (malformed ones) are test/api/bad-text.test.ts's. Every route that names a chat or
// a search (in its path, or as `chatId`/`searchId` in its body) is tried with an id never issued, the id
// of one that was deleted, and the id of a live item of the other kind; the list of routes comes from
// the router's table and the served OpenAPI document, so a route added later cannot be left out.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { apiDatabases, startTestServer, type TestServer, variantTag } from '../helpers/server.ts';
import { storedRows } from '../helpers/store.ts';

type Kind = 'chat' | 'search';

interface Case {
  /** The spec's message for this route (Errors; Beyond the spec, Run control). */
  message: string;
  /** The body the route needs besides the id; none for routes that take no body. */
  body?: (id: string) => unknown;
}

const CHAT = 'chat not found';
const SEARCH = 'search not found';
const ACTIVE_CHAT = 'active chat stream not found';
const ACTIVE_SEARCH = 'active search stream not found';
const completion = (chatId: string) => ({ chatId, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'hi' }] });

/** Keyed like the router's table: `METHOD /path`. */
const CASES: Record<string, Case> = {
  'GET /v1/chats/:chatId': { message: CHAT },
  'PATCH /v1/chats/:chatId': { message: CHAT, body: () => ({ title: 'renamed' }) },
  'DELETE /v1/chats/:chatId': { message: CHAT },
  'PATCH /v1/chats/:chatId/star': { message: CHAT, body: () => ({ starred: true }) },
  'POST /v1/chats/:chatId/messages': { message: CHAT, body: () => ({ role: 'user', content: 'hi' }) },
  'POST /v1/chats/:chatId/stream/attach': { message: ACTIVE_CHAT },
  'POST /v1/chats/:chatId/stream/stop': { message: ACTIVE_CHAT },
  'POST /v1/chat-completions': { message: CHAT, body: completion },
  'POST /v1/chat-completions/stream': { message: CHAT, body: completion },
  'POST /v1/chats/title/suggest': { message: CHAT, body: (chatId) => ({ chatId, content: 'a title please' }) },
  'GET /v1/searches/:searchId': { message: SEARCH },
  'DELETE /v1/searches/:searchId': { message: SEARCH },
  'PATCH /v1/searches/:searchId/star': { message: SEARCH, body: () => ({ starred: true }) },
  'POST /v1/searches/:searchId/run': { message: SEARCH, body: () => ({}) },
  'POST /v1/searches/:searchId/run/stream': { message: SEARCH, body: () => ({}) },
  'POST /v1/searches/:searchId/run/stream/attach': { message: ACTIVE_SEARCH },
  'POST /v1/searches/:searchId/run/stop': { message: ACTIVE_SEARCH },
  'POST /v1/searches/:searchId/chat': { message: SEARCH, body: () => ({}) },
};

/** `/v1/chats/:chatId` → `/v1/chats/{chatId}`, as the OpenAPI document writes paths. */
const openApiPath = (path: string) => path.replace(/:(\w+)/g, '{$1}');

/** Every route of the table that names a chat or a search, with which one and where. */
async function namingRoutes(t: TestServer): Promise<Map<string, { kind: Kind; method: string; path: string; inBody: boolean }>> {
  const doc = (await t.call('GET', '/v1/openapi.json')).body;
  const bodyFields = (method: string, path: string): string[] => {
    const ref: string | undefined = doc.paths[openApiPath(path)]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema?.$ref;
    return ref ? Object.keys(doc.components.schemas[ref.split('/').pop()!].properties ?? {}) : [];
  };
  const found = new Map<string, { kind: Kind; method: string; path: string; inBody: boolean }>();
  for (const { method, path } of t.server.routes) {
    const key = `${method} ${path}`;
    if (path.includes('/:chatId')) found.set(key, { kind: 'chat', method, path, inBody: false });
    else if (path.includes('/:searchId')) found.set(key, { kind: 'search', method, path, inBody: false });
    else if (bodyFields(method, path).includes('chatId')) found.set(key, { kind: 'chat', method, path, inBody: true });
    else if (bodyFields(method, path).includes('searchId')) found.set(key, { kind: 'search', method, path, inBody: true });
  }
  return found;
}

for (const db of apiDatabases()) {
  describe(`unknown ids through the real lookup ${variantTag(db)}`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ db });
    });
    after(() => t.close());

    it('the routes that name a chat or a search are exactly the ones this file knows', async () => {
      const routes = await namingRoutes(t);
      assert.deepEqual([...routes.keys()].sort(), Object.keys(CASES).sort(), 'a route was added or removed: give it its case here');
      assert.ok(routes.size >= 18);
    });

    it('every one answers its spec 404 for a well-formed id that names nothing of its kind', async () => {
      // Issued, then deleted: the rows (and the star) existed, so only a real lookup can tell.
      const gone: Record<Kind, string> = {
        chat: (await t.call('POST', '/v1/chats', { title: 'gone' })).body.chat.id,
        search: (await t.call('POST', '/v1/searches', { query: 'gone' })).body.search.id,
      };
      assert.equal((await t.call('PATCH', `/v1/chats/${gone.chat}/star`, { starred: true })).status, 200);
      assert.equal((await t.call('PATCH', `/v1/searches/${gone.search}/star`, { starred: true })).status, 200);
      assert.deepEqual((await t.call('DELETE', `/v1/chats/${gone.chat}`)).body, { deleted: true });
      assert.deepEqual((await t.call('DELETE', `/v1/searches/${gone.search}`)).body, { deleted: true });
      // Live items of the other kind: an id that exists, in the wrong table.
      const live: Record<Kind, string> = {
        chat: (await t.call('POST', '/v1/chats', { title: 'live' })).body.chat.id,
        search: (await t.call('POST', '/v1/searches', { query: 'live' })).body.search.id,
      };
      const other = (kind: Kind): Kind => (kind === 'chat' ? 'search' : 'chat');

      const before = await storedRows(t.server.ctx.pool);
      t.sim.clearRequests();
      let tried = 0;
      for (const [key, route] of await namingRoutes(t)) {
        assert.ok(CASES[key], `${key} has no case in this file`);
        const { message, body } = CASES[key];
        for (const [what, id] of [['never issued', randomUUID()], ['deleted', gone[route.kind]], [`a live ${other(route.kind)}'s`, live[other(route.kind)]]] as const) {
          const path = route.path.replace(/:\w+Id/, id);
          const r = await t.call(route.method, path, body?.(id));
          assert.deepEqual([r.status, r.body], [404, { message }], `${key} with the id of ${what}`);
          tried++;
        }
      }
      assert.equal(tried, Object.keys(CASES).length * 3);
      assert.deepEqual(await storedRows(t.server.ctx.pool), before, 'nothing was stored');
      assert.deepEqual(t.sim.requests.map((r) => r.upstream), [], 'no provider or engine was asked');
      // The live items were not touched by requests naming them as the other kind.
      assert.equal((await t.call('GET', `/v1/chats/${live.chat}`)).body.chat.title, 'live');
      assert.equal((await t.call('GET', `/v1/searches/${live.search}`)).body.search.query, 'live');
    });
  });
}
