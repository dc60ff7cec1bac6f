// Isolation between users (docs/operations.md, "Users and single sign-on"): another user's chat, search or run reads as
// absent. The matrix is generated from the router's own table, so a route added later is either
// covered or fails here until someone says what it names.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Route } from '../../src/http/router.ts';
import { apiDatabases, sim, startTestServer, waitFor, type StreamResult, type TestServer, variantTag } from '../helpers/server.ts';
import { ADMIN_TOKEN, as, chatBody, createUser, type AsUser } from '../helpers/users.ts';

const CHAT = 'chat not found';
const SEARCH = 'search not found';
const ACTIVE_CHAT = 'active chat stream not found';
const ACTIVE_SEARCH = 'active search stream not found';


interface Ids {
  chatId: string;
  searchId: string;
}

/** Routes that name a chat in their body rather than their path, with a valid body naming it. */
const NAMED_IN_BODY: Record<string, (ids: Ids) => unknown> = {
  'POST /v1/chat-completions': ({ chatId }) => chatBody('hi', { chatId }),
  'POST /v1/chat-completions/stream': ({ chatId }) => chatBody('hi', { chatId }),
  'POST /v1/chats/title/suggest': ({ chatId }) => ({ chatId, content: 'a title please' }),
};

/** Routes that name no chat, search or run (their per-user behaviour is tested on its own). */
const NAMES_NONE = new Set([
  'GET /health', 'GET /ready', 'GET /v1/auth/session', 'GET /v1/active-runs', 'GET /v1/chat-tools', 'GET /v1/workspace-items',
  'GET /v1/chats', 'POST /v1/chats', 'GET /v1/searches', 'POST /v1/searches', 'GET /v1/models',
  'POST /v1/users', 'GET /v1/users', 'GET /v1/users/:userId', 'PATCH /v1/users/:userId', 'POST /v1/users/:userId/keys',
  'DELETE /v1/users/:userId', 'GET /v1/users/:userId/usage', 'GET /v1/usage', 'GET /', 'GET /assets/:version/:name', 'GET /metrics', 'GET /v1/openapi.json',
  'GET /openai/v1/models', 'GET /openai/v1/models/:id', 'GET /openai/v1/models/:provider/:model', 'POST /openai/v1/chat/completions',
  // A response of another user (by id, or as previous_response_id): test/api/openai-responses.test.ts.
  'POST /openai/v1/responses', 'GET /openai/v1/responses/:id', 'POST /openai/v1/responses/:id/cancel',
]);

/** Valid bodies of the routes that take one, so that only the owner check can refuse. */
const BODIES: Record<string, unknown> = {
  'PATCH /v1/chats/:chatId': { title: 'taken over' },
  'PATCH /v1/chats/:chatId/star': { starred: false },
  'PATCH /v1/searches/:searchId/star': { starred: false },
  'POST /v1/chats/:chatId/messages': { role: 'user', content: 'an intruder writes' },
};

interface Case {
  route: string;
  message: string;
  path: string;
  body: unknown;
}

/** What a second user must get from each route that names a chat, search or run. */
function matrix(routes: readonly Route[], ids: Ids): Case[] {
  const cases: Case[] = [];
  for (const r of routes) {
    const route = `${r.method} ${r.path}`;
    const path = r.path.replace(':chatId', ids.chatId).replace(':searchId', ids.searchId);
    if (r.path.includes(':chatId')) {
      const message = /\/stream\/(attach|stop)$/.test(r.path) ? ACTIVE_CHAT : CHAT;
      cases.push({ route, message, path, body: BODIES[route] ?? {} });
    } else if (r.path.includes(':searchId')) {
      const message = /\/run\/(stream\/attach|stop)$/.test(r.path) ? ACTIVE_SEARCH : SEARCH;
      cases.push({ route, message, path, body: BODIES[route] ?? {} });
    } else if (NAMED_IN_BODY[route]) {
      cases.push({ route, message: CHAT, path, body: NAMED_IN_BODY[route]!(ids) });
    } else {
      assert.ok(NAMES_NONE.has(route), `${route} is not in the isolation matrix: say whether it names a chat, search or run`);
    }
  }
  return cases;
}

for (const db of apiDatabases()) {
  describe(`isolation between users ${variantTag(db)}`, () => {
    let t: TestServer;
    let alice: AsUser;
    let bob: AsUser;
    let ids: Ids;
    let running: Promise<StreamResult>;

    const aliceView = async () => {
      const chat = (await alice.call('GET', `/v1/chats/${ids.chatId}`)).body.chat;
      const search = (await alice.call('GET', `/v1/searches/${ids.searchId}`)).body.search;
      return { chat: { title: chat.title, starred: chat.starred, updatedAt: chat.updatedAt, messages: chat.messages }, search };
    };

    before(async () => {
      t = await startTestServer({ db, env: { ADMIN_TOKEN } });
      alice = await createUser(t, 'Alice');
      bob = await createUser(t, 'Bob');
      const chat = await alice.call('POST', '/v1/chats', { title: 'Alpaca notes', messages: [{ role: 'user', content: 'the alpaca grazes' }] });
      assert.equal(chat.status, 200);
      const search = await alice.call('POST', '/v1/searches', { query: 'alpaca wool' });
      ids = { chatId: chat.body.chat.id, searchId: search.body.search.id };
      assert.equal((await alice.call('POST', `/v1/searches/${ids.searchId}/run`, {})).status, 200);
      assert.equal((await alice.call('PATCH', `/v1/chats/${ids.chatId}/star`, { starred: true })).status, 200);
      // A run of Alice's that stays active through the matrix, so attach and stop have something to refuse.
      running = alice.stream('/v1/chat-completions/stream', chatBody(sim({ deltas: 4000, rate: 5 }), { chatId: ids.chatId }));
      await waitFor(async () => (await alice.call('GET', '/v1/active-runs')).body.chats.includes(ids.chatId), 10_000, "Alice's run");
      // The run stores its input as it starts: the matrix compares Alice's chat before and after, so
      // it begins once that write is in, not while it may still land.
      await waitFor(async () => (await alice.call('GET', `/v1/chats/${ids.chatId}`)).body.chat.messages.length === 2, 10_000, "the run's stored input");
    });
    after(() => t.close());

    it("a second user gets the spec's 404 from every route that names a chat, search or run, and the owner's data is unchanged", async () => {
      const cases = matrix(t.server.routes, ids);
      assert.ok(cases.length >= 18, `only ${cases.length} routes name a chat, search or run`);
      const before = await aliceView();
      for (const c of cases) {
        const [method] = c.route.split(' ');
        const r = await bob.call(method!, c.path, method === 'GET' || method === 'DELETE' ? undefined : c.body);
        assert.equal(r.status, 404, `${c.route}: ${JSON.stringify(r.body)}`);
        assert.deepEqual(r.body, { message: c.message }, c.route);
      }
      assert.deepEqual(await aliceView(), before);
      assert.deepEqual((await alice.call('GET', '/v1/active-runs')).body.chats, [ids.chatId], "Alice's run goes on");
    });

    it("the admin is another user too: Alice's items read as absent to the admin token", async () => {
      const admin = as(t, ADMIN_TOKEN);
      assert.deepEqual((await admin.call('GET', `/v1/chats/${ids.chatId}`)).body, { message: CHAT });
      assert.deepEqual((await admin.call('POST', `/v1/chats/${ids.chatId}/stream/stop`)).body, { message: ACTIVE_CHAT });
    });

    it('lists, history search and active runs hold only the caller’s own', async () => {
      const own = await bob.call('POST', '/v1/chats', { title: 'Bob alpaca plans' });
      const lists = async (u: AsUser) => ({
        chats: (await u.call('GET', '/v1/chats')).body.chats.map((c: { id: string }) => c.id),
        searches: (await u.call('GET', '/v1/searches')).body.searches.map((s: { id: string }) => s.id),
        items: (await u.call('GET', '/v1/workspace-items')).body.items.map((i: { id: string }) => i.id),
        found: (await u.call('GET', '/v1/workspace-items?q=alpaca')).body.items.map((i: { id: string }) => i.id),
        active: (await u.call('GET', '/v1/active-runs')).body,
        cluster: (await u.call('GET', '/v1/active-runs?scope=cluster')).body,
      });
      const a = await lists(alice);
      assert.deepEqual(a.chats, [ids.chatId]);
      assert.deepEqual(a.searches, [ids.searchId]);
      assert.deepEqual(a.items.sort(), [ids.chatId, ids.searchId].sort());
      assert.deepEqual(a.found.sort(), [ids.chatId, ids.searchId].sort());
      assert.deepEqual(a.active, { chats: [ids.chatId], searches: [] });
      assert.deepEqual(a.cluster, { chats: [ids.chatId], searches: [] });
      const b = await lists(bob);
      assert.deepEqual(b, { chats: [own.body.chat.id], searches: [], items: [own.body.chat.id], found: [own.body.chat.id], active: { chats: [], searches: [] }, cluster: { chats: [], searches: [] } });
    });

    it('reuseByQuery finds only the caller’s own search', async () => {
      const r = await bob.call('POST', '/v1/searches', { query: 'Alpaca Wool', reuseByQuery: true });
      assert.equal(r.body.reused, false);
      assert.notEqual(r.body.search.id, ids.searchId);
      const mine = await alice.call('POST', '/v1/searches', { query: 'Alpaca Wool', reuseByQuery: true });
      assert.equal(mine.body.reused, true);
      assert.equal(mine.body.search.id, ids.searchId);
    });

    it('the same Idempotency-Key from two users starts two runs', async () => {
      const headers = { 'idempotency-key': 'shared-key-1' };
      const body = chatBody('same words');
      const first = await alice.call('POST', '/v1/chat-completions', body, headers);
      const second = await bob.call('POST', '/v1/chat-completions', body, headers);
      assert.equal(first.status, 200);
      assert.equal(second.status, 200);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.equal(second.headers.get('idempotent-replayed'), null, 'Bob’s request was answered from Alice’s run');
      const again = await bob.call('POST', '/v1/chat-completions', body, headers);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      const owners = await t.server.ctx.pool.query<{ owner_id: string }>("SELECT owner_id FROM idempotency_keys WHERE key = 'shared-key-1' ORDER BY owner_id");
      assert.deepEqual(owners.rows.map((r) => r.owner_id).sort(), [alice.id, bob.id].sort());
    });

    it("the owner can still stop their run, which ends as stopped", async () => {
      assert.equal((await alice.call('POST', `/v1/chats/${ids.chatId}/stream/stop`)).status, 200);
      const { events } = await running;
      const last = events.at(-1)!;
      assert.equal(last.event, 'done');
      assert.equal(last.data.stopped, true);
    });
  });
}
