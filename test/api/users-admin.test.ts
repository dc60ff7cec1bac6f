// Managing users (docs/operations.md, "Users and single sign-on"): the admin endpoints' statuses and messages, keys shown
// once and stored as a hash, and rotation, disabling and deletion taking effect at once (a start of the
// deleted user's that was authenticated before the deletion included).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { apiDatabases, NEEDS_POSTGRES, serverOnScratchPostgres, sim, startTestServer, waitFor, type TestServer, variantTag } from '../helpers/server.ts';
import { ADMIN_TOKEN, as, chatBody, createUser } from '../helpers/users.ts';

const UNAUTHORIZED = { message: 'unauthorized' };

for (const db of apiDatabases()) {
  describe(`managing users ${variantTag(db)}`, () => {
    let t: TestServer;
    let admin: ReturnType<typeof as>;
    before(async () => {
      t = await startTestServer({ db, env: { ADMIN_TOKEN } });
      admin = as(t, ADMIN_TOKEN);
    });
    after(() => t.close());

    it('creates a user with a key shown once and stored only as its sha-256', async () => {
      const r = await admin.call('POST', '/v1/users', { name: '  Carol  ', maxActiveRuns: 3, tokensPerDay: null });
      assert.equal(r.status, 201);
      const { user, apiKey } = r.body;
      assert.deepEqual(Object.keys(user).sort(), ['costPerDay', 'createdAt', 'disabled', 'id', 'maxActiveRuns', 'name', 'source', 'tokensPerDay']);
      assert.equal(user.name, 'Carol');
      assert.equal(user.maxActiveRuns, 3);
      assert.equal(user.tokensPerDay, null);
      assert.equal(user.disabled, false);
      assert.equal(user.source, 'key');
      assert.match(apiKey, /^css_[A-Za-z0-9_-]{43}$/, 'css_ and 32 random bytes');
      const { rows } = await t.server.ctx.pool.query('SELECT row_to_json(u)::text AS row, key_hash FROM users u WHERE id = $1', [user.id]);
      assert.ok(!rows[0].row.includes(apiKey), 'the key itself is stored nowhere in the row');
      assert.deepEqual(rows[0].key_hash, createHash('sha256').update(apiKey).digest());
      assert.deepEqual((await admin.call('GET', `/v1/users/${user.id}`)).body, { user });
      assert.ok(!JSON.stringify((await admin.call('GET', '/v1/users')).body).includes(apiKey));
    });

    it('answers the session as the user, or as the admin', async () => {
      const dave = await createUser(t, 'Dave');
      assert.deepEqual((await dave.call('GET', '/v1/auth/session')).body, { authenticated: true, mode: 'token', user: { id: dave.id, name: 'Dave', admin: false } });
      assert.deepEqual((await admin.call('GET', '/v1/auth/session')).body, { authenticated: true, mode: 'token', user: { id: 'admin', name: 'admin', admin: true } });
    });

    it('lists users oldest first and patches any subset of fields', async () => {
      const erin = await createUser(t, 'Erin');
      const list = (await admin.call('GET', '/v1/users')).body.users as Array<{ id: string; createdAt: string }>;
      assert.equal(list.at(-1)!.id, erin.id);
      assert.deepEqual([...list].sort((a, b) => a.createdAt.localeCompare(b.createdAt)).map((u) => u.id), list.map((u) => u.id));
      const p = await admin.call('PATCH', `/v1/users/${erin.id}`, { name: 'Erin B', tokensPerDay: 1000 });
      assert.equal(p.status, 200);
      assert.equal(p.body.user.name, 'Erin B');
      assert.equal(p.body.user.tokensPerDay, 1000);
      assert.equal(p.body.user.maxActiveRuns, null);
    });

    it('refuses bad bodies with 400 naming the field, unknown users with 404, and users with 403', async () => {
      for (const [body, field] of [
        [{ name: '   ' }, 'name'],
        [{ name: 'x'.repeat(101) }, 'name'],
        [{}, 'name'],
        [{ name: 'ok', maxActiveRuns: 0 }, 'maxActiveRuns'],
        [{ name: 'ok', tokensPerDay: 1.5 }, 'tokensPerDay'],
        // Past the integer columns' range: a 400 naming the field, not the database's 500.
        [{ name: 'ok', maxActiveRuns: 2 ** 31 }, 'maxActiveRuns'],
        [{ name: 'ok', tokensPerDay: 1e12 }, 'tokensPerDay'],
        [{ name: 'nul\u0000byte' }, 'name'],
      ] as const) {
        const r = await admin.call('POST', '/v1/users', body);
        assert.equal(r.status, 400, JSON.stringify(body));
        assert.match(r.body.message, new RegExp(field), JSON.stringify(r.body));
      }
      const frank = await createUser(t, 'Frank');
      for (const [body, field] of [[{ disabled: 'yes' }, 'disabled'], [{ tokensPerDay: 2 ** 31 }, 'tokensPerDay']] as const) {
        const bad = await admin.call('PATCH', `/v1/users/${frank.id}`, body);
        assert.equal(bad.status, 400, JSON.stringify(body));
        assert.match(bad.body.message, new RegExp(field));
      }
      const missing = '00000000-0000-4000-8000-000000000000';
      for (const [method, path] of [['GET', `/v1/users/${missing}`], ['PATCH', `/v1/users/${missing}`], ['POST', `/v1/users/${missing}/keys`], ['DELETE', `/v1/users/${missing}`]] as const) {
        const r = await admin.call(method, path, method === 'PATCH' ? { name: 'n' } : undefined);
        assert.deepEqual([r.status, r.body], [404, { message: 'user not found' }], `${method} ${path}`);
      }
      for (const [method, path] of [['GET', '/v1/users'], ['POST', '/v1/users'], ['GET', `/v1/users/${frank.id}`], ['POST', `/v1/users/${frank.id}/keys`], ['DELETE', `/v1/users/${frank.id}`], ['GET', '/metrics']] as const) {
        const r = await frank.call(method, path, method === 'POST' ? { name: 'n' } : undefined);
        assert.deepEqual([r.status, r.body], [403, { message: 'admin token required' }], `${method} ${path}`);
      }
    });

    it('rotation: the new key works and the old one, already cached, stops at once', async () => {
      const gina = await createUser(t, 'Gina');
      assert.equal((await gina.call('GET', '/v1/chats')).status, 200);
      const r = await admin.call('POST', `/v1/users/${gina.id}/keys`);
      assert.equal(r.status, 201);
      assert.deepEqual(Object.keys(r.body), ['apiKey']);
      const old = await gina.call('GET', '/v1/chats');
      assert.deepEqual([old.status, old.body], [401, UNAUTHORIZED]);
      assert.equal((await as(t, r.body.apiKey).call('GET', '/v1/chats')).status, 200);
    });

    it('disabling stops the key at once; enabling brings it back', async () => {
      const hal = await createUser(t, 'Hal');
      assert.equal((await hal.call('GET', '/v1/chats')).status, 200);
      assert.equal((await admin.call('PATCH', `/v1/users/${hal.id}`, { disabled: true })).body.user.disabled, true);
      assert.equal((await hal.call('GET', '/v1/chats')).status, 401);
      await admin.call('PATCH', `/v1/users/${hal.id}`, { disabled: false });
      assert.equal((await hal.call('GET', '/v1/chats')).status, 200);
    });

    it("deletion: the key stops, running streams end with the deletion's error, and the user's items are gone", async () => {
      const ivy = await createUser(t, 'Ivy');
      const chat = await ivy.call('POST', '/v1/chats', { title: 'doomed' });
      await ivy.call('POST', '/v1/searches', { query: 'doomed' });
      await ivy.call('PATCH', `/v1/chats/${chat.body.chat.id}/star`, { starred: true });
      const stream = ivy.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: sim({ deltas: 4000, rate: 5 }) }] });
      await waitFor(async () => (await ivy.call('GET', '/v1/active-runs')).body.chats.length === 1, 10_000, "Ivy's run");
      assert.deepEqual((await admin.call('DELETE', `/v1/users/${ivy.id}`)).body, { deleted: true });
      const { events } = await stream;
      assert.deepEqual(events.at(-1), { event: 'error', data: { type: 'error', message: 'run cancelled: user deleted' } });
      assert.deepEqual((await ivy.call('GET', '/v1/chats')).body, UNAUTHORIZED);
      assert.equal((await admin.call('GET', `/v1/users/${ivy.id}`)).status, 404);
      const left = await t.server.ctx.pool.query(
        `SELECT (SELECT count(*) FROM chats WHERE owner_id = $1)::int AS chats, (SELECT count(*) FROM searches WHERE owner_id = $1)::int AS searches,
                (SELECT count(*) FROM project_members WHERE owner_id = $1)::int AS stars`,
        [ivy.id],
      );
      assert.deepEqual(left.rows[0], { chats: 0, searches: 0, stars: 0 });
    });

    it('a token that is no key, or a key never issued, is 401 as before', async () => {
      assert.deepEqual((await as(t, 'nope').call('GET', '/v1/chats')).body, UNAUTHORIZED);
      assert.deepEqual((await as(t, `css_${'A'.repeat(43)}`).call('GET', '/v1/chats')).body, UNAUTHORIZED);
      assert.equal((await t.call('GET', '/v1/chats')).status, 401);
    });
  });
}

describe('users in open mode', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => t.close());

  it('answers every /v1/users endpoint with 400 naming ADMIN_TOKEN', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    for (const [method, path] of [['GET', '/v1/users'], ['POST', '/v1/users'], ['GET', `/v1/users/${id}`], ['PATCH', `/v1/users/${id}`], ['POST', `/v1/users/${id}/keys`], ['DELETE', `/v1/users/${id}`], ['GET', `/v1/users/${id}/usage`]] as const) {
      const r = await t.call(method, path, method === 'GET' || method === 'DELETE' ? undefined : { name: 'n' });
      assert.deepEqual([r.status, r.body], [400, { message: 'users need ADMIN_TOKEN to be set' }], `${method} ${path}`);
    }
    assert.deepEqual((await t.call('GET', '/v1/auth/session')).body, { authenticated: true, mode: 'open' });
  });
});

describe('deleting a user while a start of theirs is on its way', { skip: NEEDS_POSTGRES }, () => {
  const scratch = serverOnScratchPostgres({ ADMIN_TOKEN });

  it('refuses the start with 401 once it gets there: it was authenticated before the deletion', async () => {
    const t = scratch.server();
    const kim = await createUser(t, 'Kim', { tokensPerDay: 1_000_000 });
    // The start reads the user's tokens of the day after it is authenticated: held here by a lock on
    // that table (which the deletion does not touch) until the user is gone.
    const db = new pg.Client({ connectionString: scratch.url() });
    await db.connect();
    try {
      await db.query('BEGIN');
      await db.query('LOCK TABLE user_day_tokens IN ACCESS EXCLUSIVE MODE');
      const start = kim.call('POST', '/v1/chat-completions/stream', chatBody(sim({ deltas: 3 })));
      await waitFor(async () => Number((await db.query('SELECT count(*) AS n FROM pg_locks WHERE NOT granted')).rows[0].n) >= 1, 10_000, "the start waiting on the day's tokens");
      assert.deepEqual((await as(t, ADMIN_TOKEN).call('DELETE', `/v1/users/${kim.id}`)).body, { deleted: true });
      await db.query('ROLLBACK');
      const refused = await start;
      assert.deepEqual([refused.status, refused.body], [401, UNAUTHORIZED]);
      assert.deepEqual((await as(t, ADMIN_TOKEN).call('GET', '/v1/active-runs')).body.chats, []);
    } finally {
      await db.end();
    }
  });
});
