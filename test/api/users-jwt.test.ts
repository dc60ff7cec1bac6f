// Single sign-on end to end (docs/operations.md, "Users and single sign-on"): with AUTH_JWKS_URL set, a JWT signed by a key
// of the identity provider's JWKS acts as the user bound to its `sub`, created at first use; a token
// that fails a check is the same 401 as a wrong token; each such user has a workspace of their own.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AUDIENCE, ISSUER, sign, startJwksServer, testKey, type JwksServer, type TestKey } from '../helpers/jwks-server.ts';
import { apiDatabases, startTestServer, type TestServer, variantTag } from '../helpers/server.ts';
import { ADMIN_TOKEN, as, chatBody } from '../helpers/users.ts';

const UNAUTHORIZED = { message: 'unauthorized' };

for (const db of apiDatabases()) {
  describe(`users from single sign-on ${variantTag(db)}`, () => {
    let t: TestServer;
    let jwks: JwksServer;
    let key: TestKey;
    before(async () => {
      key = await testKey('RS256', 'k1');
      jwks = await startJwksServer([key, await testKey('ES256', 'k2')]);
      t = await startTestServer({ db, env: { ADMIN_TOKEN, AUTH_JWKS_URL: jwks.url, AUTH_ISSUER: ISSUER, AUTH_AUDIENCE: AUDIENCE } });
    });
    after(async () => {
      await t.close();
      await jwks.close();
    });

    const tokenFor = (sub: string, claims: Record<string, unknown> = {}, k = key) => sign(k, Date.now(), { sub, ...claims });

    it('a first token creates its user, named from its claims, and later ones act as that user', async () => {
      const alice = as(t, await tokenFor('alice-sub', { name: 'Alice Liddell' }));
      const session = await alice.call('GET', '/v1/auth/session');
      assert.equal(session.status, 200);
      assert.equal(session.body.user.name, 'Alice Liddell');
      assert.equal(session.body.user.admin, false);
      const users = (await as(t, ADMIN_TOKEN).call('GET', '/v1/users')).body.users;
      const made = users.filter((u: { name: string }) => u.name === 'Alice Liddell');
      assert.equal(made.length, 1);
      assert.equal(made[0].source, 'jwt');
      assert.equal(made[0].id, session.body.user.id);
      // A new token for the same `sub` (an ES256 one, from the other key) is the same user, not a second.
      const again = as(t, await tokenFor('alice-sub', { preferred_username: 'alice' }, jwks.keys[1]));
      assert.equal((await again.call('GET', '/v1/auth/session')).body.user.id, made[0].id);
    });

    it('a token already verified is answered from the cache: no JWKS fetch', async () => {
      const bob = as(t, await tokenFor('bob-sub', { preferred_username: 'bob' }));
      assert.equal((await bob.call('GET', '/v1/chats')).status, 200);
      const fetched = jwks.requests;
      for (let i = 0; i < 5; i++) assert.equal((await bob.call('GET', '/v1/chats')).status, 200);
      assert.equal(jwks.requests, fetched);
    });

    it('each single-sign-on user sees only their own chats', async () => {
      const carol = as(t, await tokenFor('carol-sub'));
      const dave = as(t, await tokenFor('dave-sub'));
      const done = await carol.stream('/v1/chat-completions/stream', chatBody('carol asks'));
      const chatId = done.events[0]!.data.chatId;
      assert.equal((await carol.call('GET', `/v1/chats/${chatId}`)).status, 200);
      const other = await dave.call('GET', `/v1/chats/${chatId}`);
      assert.equal(other.status, 404);
      assert.deepEqual(other.body, { message: 'chat not found' });
      assert.deepEqual((await dave.call('GET', '/v1/chats')).body, { chats: [] });
    });

    it('an expired token, a wrong audience or issuer, and an unknown key are the 401 of a wrong token', async () => {
      const past = Date.now() - 3 * 3600_000;
      const other = await testKey('RS256', 'k1');
      const bad = [
        await sign(key, past, { sub: 'erin-sub' }),
        await tokenFor('erin-sub', { aud: 'another-service' }),
        await tokenFor('erin-sub', { iss: 'https://elsewhere.example' }),
        await tokenFor('erin-sub', {}, other),
      ];
      for (const token of bad) {
        const r = await as(t, token).call('GET', '/v1/chats');
        assert.equal(r.status, 401);
        assert.deepEqual(r.body, UNAUTHORIZED);
      }
      const users = (await as(t, ADMIN_TOKEN).call('GET', '/v1/users')).body.users;
      assert.ok(!users.some((u: { name: string }) => u.name === 'erin-sub'), 'no user was made for a refused token');
    });

    it('a disabled single-sign-on user is refused at once, even with a token already verified', async () => {
      const frank = as(t, await tokenFor('frank-sub', { name: 'Frank' }));
      const id = (await frank.call('GET', '/v1/auth/session')).body.user.id;
      assert.equal((await as(t, ADMIN_TOKEN).call('PATCH', `/v1/users/${id}`, { disabled: true })).status, 200);
      const r = await frank.call('GET', '/v1/chats');
      assert.equal(r.status, 401);
      assert.deepEqual(r.body, UNAUTHORIZED);
    });
  });
}
