// Resolving the bearer into a caller (src/auth/callers.ts) on both databases: the admin token and a
// cached key resolve synchronously (no database round trip), a key is looked up once, revocation
// drops it at once (even from a lookup that was in flight), and a JWT, through a verifier with the
// interface of src/auth/jwt.ts, is its `sub`'s user, created at first use and cached until it expires.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ADMIN_CALLER } from '../../src/auth/caller.ts';
import { Callers, MAX_LOOKUPS, type JwtVerifier } from '../../src/auth/callers.ts';
import { keyHash, newApiKey } from '../../src/auth/keys.ts';
import type { Database } from '../../src/db/types.ts';
import { createUser, getUser, updateUser } from '../../src/store/users.ts';
import os from 'node:os';
import pg from 'pg';
import { openDatabase } from '../../src/db/pool.ts';
import { createScratchPostgres, testDatabases } from '../helpers/db.ts';
import { waitFor } from '../helpers/wait.ts';

const ADMIN = 'callers-test-admin';
const bearer = (token: string) => `Bearer ${token}`;

/** Accepts `header.<sub>.sig` tokens as the real verifier accepts a good signature; counts its checks. */
class SubVerifier implements JwtVerifier {
  checks = 0;
  constructor(private readonly expiresAt: number) {}
  async verify(token: string) {
    this.checks++;
    const [, sub, sig] = token.split('.');
    return sig === 'good' ? { sub: sub!, name: `name of ${sub}`, expiresAt: this.expiresAt } : null;
  }
  close() {}
}

for (const target of await testDatabases()) {
  describe(`who is calling ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(() => db?.close());

    const withKey = async (name: string) => {
      const key = newApiKey();
      const user = await createUser(db.pool, { name, maxActiveRuns: 2, tokensPerDay: null, keyHash: keyHash(key) });
      return { key, user };
    };

    it('open mode: everyone is the admin; token mode: the admin token is, synchronously', () => {
      assert.equal(new Callers({ adminToken: undefined, pool: db.pool }).authenticate(''), ADMIN_CALLER);
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool });
      assert.equal(callers.authenticate(bearer(ADMIN)), ADMIN_CALLER);
      assert.equal(callers.authenticate(''), null);
      assert.equal(callers.authenticate(bearer('wrong')), null, 'not a key: refused without a lookup');
    });

    it('a key is looked up once, then resolved from the cache; revocation drops it at once', async () => {
      const { key, user } = await withKey('Kim');
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool });
      const first = callers.authenticate(bearer(key));
      assert.ok(first instanceof Promise, 'the first use asks the database');
      assert.deepEqual(await first, { userId: user.id, admin: false, maxActiveRuns: 2, tokensPerDay: null, costPerDay: null });
      assert.deepEqual(callers.authenticate(bearer(key)), { userId: user.id, admin: false, maxActiveRuns: 2, tokensPerDay: null, costPerDay: null }, 'then a synchronous hit');
      await updateUser(db.pool, user.id, { disabled: true });
      callers.revoke(user.id);
      const after = callers.authenticate(bearer(key));
      assert.ok(after instanceof Promise);
      assert.equal(await after, null, 'a disabled user is nobody');
    });

    it('a lookup in flight while the user is revoked does not cache what it found', async () => {
      const { key, user } = await withKey('Lou');
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool });
      const inFlight = callers.authenticate(bearer(key));
      callers.revoke(user.id);
      assert.equal((await inFlight)?.userId, user.id);
      assert.ok(callers.authenticate(bearer(key)) instanceof Promise, 'looked up again, not served from a stale entry');
    });

    it('entries age out: a revocation message that never came keeps a key alive for at most the TTL', async () => {
      const { key } = await withKey('Max');
      let now = 1_000_000;
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool, now: () => now });
      await callers.authenticate(bearer(key));
      assert.ok(!(callers.authenticate(bearer(key)) instanceof Promise));
      now += 60_001;
      assert.ok(callers.authenticate(bearer(key)) instanceof Promise);
    });

    it('keeps what is live and no more: expired tokens and their users go as new ones come, and the oldest past the bound', async () => {
      const [a, b, c] = [await withKey('Ann'), await withKey('Ben'), await withKey('Cy')];
      let now = 2_000_000;
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool, now: () => now, maxCached: 2 });
      await callers.authenticate(bearer(a.key));
      now += 30_000;
      await callers.authenticate(bearer(b.key));
      assert.deepEqual(callers.size, { tokens: 2, users: 2 });
      now += 30_001;
      await callers.authenticate(bearer(c.key));
      assert.deepEqual(callers.size, { tokens: 2, users: 2 }, "Ann's token expired: it and her user's entry went");
      assert.ok(!(callers.authenticate(bearer(b.key)) instanceof Promise), "Ben's is still live");
      await callers.authenticate(bearer(a.key));
      assert.deepEqual(callers.size, { tokens: 2, users: 2 }, 'at the bound the oldest (Ben) went');
      assert.ok(callers.authenticate(bearer(b.key)) instanceof Promise);
    });

    it("a JWT is its sub's user, created at first use, verified once until it expires", async () => {
      const now = Date.now();
      const verifier = new SubVerifier(Math.floor(now / 1000) + 30);
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool, jwt: verifier, now: () => now });
      const token = `eyJhbGciOiJSUzI1NiJ9.sub-${now}.good`;
      const caller = await callers.authenticate(bearer(token));
      assert.ok(caller && !caller.admin);
      const user = await getUser(db.pool, caller.userId);
      assert.deepEqual([user?.name, user?.source], [`name of sub-${now}`, 'jwt']);
      assert.deepEqual(callers.authenticate(bearer(token)), caller, 'cached: no second signature check');
      assert.equal(verifier.checks, 1);
      // Another token of the same sub is the same user.
      assert.equal((await callers.authenticate(bearer(`eyJhbGciOiJFUzI1NiJ9.sub-${now}.good`)))?.userId, caller.userId);
      assert.equal(verifier.checks, 2);
      assert.equal(await callers.authenticate(bearer('eyJhbGciOiJSUzI1NiJ9.someone.bad')), null, 'a token that fails a check');
      await updateUser(db.pool, caller.userId, { disabled: true });
      callers.revoke(caller.userId);
      assert.equal(await callers.authenticate(bearer(token)), null, "a disabled JWT user's token");
    });
  });
}

describe('token look-ups at once', { skip: process.env.TEST_DATABASE_URL ? false : 'needs Postgres (TEST_DATABASE_URL is not set)' }, () => {
  it(`ask the database ${MAX_LOOKUPS} at a time, whatever the flood of key-shaped guesses`, async () => {
    const scratch = await createScratchPostgres();
    // A pool wider than the bound, so that only the bound can hold the look-ups back.
    const db = await openDatabase({ DATABASE_URL: scratch.url, DATA_DIR: os.tmpdir() }, { poolMax: 30 });
    const locker = new pg.Client({ connectionString: scratch.url });
    await locker.connect();
    const waitingAtLock = async () => Number((await db.pool.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%key_hash%'`)).rows[0].n);
    try {
      const callers = new Callers({ adminToken: ADMIN, pool: db.pool });
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE users IN ACCESS EXCLUSIVE MODE');
      const guesses = Array.from({ length: 3 * MAX_LOOKUPS }, () => callers.authenticate(bearer(newApiKey())));
      let most = 0;
      await waitFor(async () => (most = Math.max(most, await waitingAtLock())) >= MAX_LOOKUPS, 10_000, 'the first look-ups to reach the lock');
      await locker.query('COMMIT');
      const settled = Promise.all(guesses);
      let done = false;
      void settled.then(() => (done = true));
      // Sampled until every guess is answered: never more than the bound at the database at once.
      await waitFor(async () => ((most = Math.max(most, await waitingAtLock())), done), 10_000, 'every guess to be answered');
      assert.deepEqual(await settled, guesses.map(() => null), 'nobody');
      assert.equal(most, MAX_LOOKUPS);
    } finally {
      await locker.end();
      await db.close();
      await scratch.drop();
    }
  });
});
