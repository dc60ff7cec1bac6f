// Single sign-on tokens against a real JWKS over HTTP (test/helpers/jwks-server.ts). Time is the
// verifier's injected clock, so expiry, leeway and the refetch window are decided by counts and
// claims, never by waiting.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { SignJWT, base64url } from 'jose';
import { createJwtVerifier, type JwtVerifier, type JwtVerifierOptions } from '../../src/auth/jwt.ts';
import { AUDIENCE, ISSUER, capturedLog, sign, startJwksServer, testKey, type JwksServer, type TestKey } from '../helpers/jwks-server.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('auth/jwt', () => {
  let rsa: TestKey;
  let ec: TestKey;
  let server: JwksServer;
  const opened: JwtVerifier[] = [];

  before(async () => {
    [rsa, ec] = await Promise.all([testKey('RS256', 'rsa-1'), testKey('ES256', 'ec-1')]);
    server = await startJwksServer([rsa, ec]);
  });
  after(async () => {
    for (const v of opened) v.close();
    await server.close();
  });

  /** A verifier on the shared server with its own clock; `clock.t` is milliseconds since the epoch. */
  function verifier(opts: Partial<JwtVerifierOptions> = {}) {
    const clock = { t: Date.UTC(2026, 0, 1) };
    const v = createJwtVerifier({ jwksUrl: server.url, issuer: ISSUER, audience: AUDIENCE, now: () => clock.t, log: capturedLog().log, ...opts });
    opened.push(v);
    return { v, clock };
  }

  describe('valid tokens', () => {
    it('RS256 and ES256 give the identity, the name from name, then preferred_username, then sub', async () => {
      const { v, clock } = verifier();
      const exp = Math.floor(clock.t / 1000) + 3600;
      assert.deepEqual(await v.verify(await sign(rsa, clock.t, { name: 'Ada Lovelace', preferred_username: 'ada' })), { sub: 'user-1', name: 'Ada Lovelace', expiresAt: exp });
      assert.deepEqual(await v.verify(await sign(ec, clock.t, { sub: 'user-2', preferred_username: 'grace' })), { sub: 'user-2', name: 'grace', expiresAt: exp });
      assert.deepEqual(await v.verify(await sign(ec, clock.t, { sub: 'user-3', name: '  ' })), { sub: 'user-3', name: 'user-3', expiresAt: exp });
      assert.equal(v.stats().verified, 3);
    });

    it('accepts any issuer and audience when none is configured, and an audience among several', async () => {
      const { v, clock } = verifier({ issuer: undefined, audience: undefined });
      assert.ok(await v.verify(await sign(rsa, clock.t, { iss: 'https://other.example', aud: 'other' })));
      const { v: strict } = verifier();
      assert.ok(await strict.verify(await sign(rsa, clock.t, { aud: ['account', AUDIENCE] })));
    });
  });

  describe('refused tokens are null, never a throw', () => {
    it('a bad signature: another key under a published kid, or a payload changed after signing', async () => {
      const { v, clock } = verifier();
      const stranger = await testKey('RS256', 'stranger');
      assert.equal(await v.verify(await sign(stranger, clock.t, {}, { kid: rsa.kid })), null);
      const [h, , s] = (await sign(rsa, clock.t)).split('.');
      const forged = base64url.encode(JSON.stringify({ sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: Math.floor(clock.t / 1000) + 3600 }));
      assert.equal(await v.verify(`${h}.${forged}.${s}`), null);
      assert.equal(v.stats().verified, 0);
    });

    it('exp: within the 60 s leeway accepted, beyond it refused', async () => {
      const { v, clock } = verifier();
      const sec = Math.floor(clock.t / 1000);
      assert.ok(await v.verify(await sign(rsa, clock.t, { exp: sec - 59 })));
      assert.equal(await v.verify(await sign(rsa, clock.t, { exp: sec - 61 })), null);
      const { v: strict } = verifier({ leewaySec: 0 });
      assert.equal(await strict.verify(await sign(rsa, clock.t, { exp: sec - 1 })), null);
    });

    it('nbf in the future beyond the leeway refused, within it accepted', async () => {
      const { v, clock } = verifier();
      const sec = Math.floor(clock.t / 1000);
      assert.equal(await v.verify(await sign(rsa, clock.t, { nbf: sec + 120 })), null);
      assert.ok(await v.verify(await sign(rsa, clock.t, { nbf: sec + 30 })));
    });

    it('a wrong issuer, a wrong or missing audience, no sub or no exp', async () => {
      const { v, clock } = verifier();
      assert.equal(await v.verify(await sign(rsa, clock.t, { iss: 'https://evil.example/realms/test' })), null);
      assert.equal(await v.verify(await sign(rsa, clock.t, { aud: 'another-app' })), null);
      assert.equal(await v.verify(await sign(rsa, clock.t, { aud: undefined })), null);
      assert.equal(await v.verify(await sign(rsa, clock.t, { sub: undefined })), null);
      assert.equal(await v.verify(await sign(rsa, clock.t, { exp: undefined })), null);
      assert.equal(v.stats().verified, 0);
    });

    it('alg none, HS256 and RS384 refused before any key is fetched; garbage too', async () => {
      const { v, clock } = verifier();
      const claims = { sub: 'admin', iss: ISSUER, aud: AUDIENCE, exp: Math.floor(clock.t / 1000) + 3600 };
      const none = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(JSON.stringify(claims))}.`;
      assert.equal(await v.verify(none), null);
      const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: rsa.kid }).sign(new TextEncoder().encode('a shared secret of 32 bytes!!!!!'));
      assert.equal(await v.verify(hs), null);
      const rs384 = await testKey('RS384', 'rs384');
      server.keys = [...server.keys, rs384];
      try {
        assert.equal(await v.verify(await sign(rs384, clock.t)), null);
      } finally {
        server.keys = server.keys.filter((k) => k !== rs384);
      }
      for (const junk of ['', 'Bearer', 'a.b.c', 'x'.repeat(10_000)]) assert.equal(await v.verify(junk), null);
      assert.equal(v.stats().jwksFetches, 0, 'a token of a refused alg never reaches the JWKS');
    });
  });

  describe('key rotation', () => {
    it('a new kid is fetched once the cooldown since the last fetch has passed, then accepted', async () => {
      const { v, clock } = verifier();
      assert.ok(await v.verify(await sign(rsa, clock.t)));
      assert.equal(v.stats().jwksFetches, 1);
      const rotated = await testKey('RS256', 'rsa-2');
      server.keys = [rotated, ...server.keys];
      try {
        const token = await sign(rotated, clock.t, { sub: 'user-rotated' });
        clock.t += 5_000;
        assert.equal(await v.verify(token), null, 'inside the 30 s window the set is not refetched');
        assert.equal(v.stats().jwksFetches, 1);
        clock.t += 25_000;
        const others = await Promise.all(['r1', 'r2', 'r3'].map((sub) => sign(rotated, clock.t, { sub })));
        const answers = await Promise.all([token, ...others].map((t) => v.verify(t)));
        assert.deepEqual(answers.map((a) => a?.sub), ['user-rotated', 'r1', 'r2', 'r3'], 'requests arriving during the refetch wait for it');
        assert.equal(v.stats().jwksFetches, 2);
      } finally {
        server.keys = server.keys.filter((k) => k !== rotated);
      }
    });

    it('a flood of unknown kids costs at most one JWKS request per window', async () => {
      const { v, clock } = verifier();
      assert.ok(await v.verify(await sign(ec, clock.t)));
      const before = server.requests;
      const strangers = await Promise.all(Array.from({ length: 8 }, (_, i) => testKey('ES256', `unknown-${i}`)));
      const flood = async () => {
        const tokens = await Promise.all(strangers.flatMap((k) => [sign(k, clock.t), sign(k, clock.t, { sub: 'other' })]));
        const answers = await Promise.all(tokens.map((t) => v.verify(t)));
        assert.deepEqual(answers, tokens.map(() => null));
      };
      await flood();
      assert.equal(server.requests - before, 0, 'the set was fetched just now');
      clock.t += 30_000;
      await flood();
      assert.equal(server.requests - before, 1, 'one refetch for sixteen unknown-kid tokens at once');
      clock.t += 29_999;
      await flood();
      assert.equal(server.requests - before, 1);
      clock.t += 1;
      await flood();
      assert.equal(server.requests - before, 2);
      assert.ok(await v.verify(await sign(ec, clock.t, { sub: 'still-fine' })), 'known keys keep working');
    });
  });

  describe('the verified-token cache', () => {
    it('a token already verified costs no signature check and no fetch, until its exp', async () => {
      const { v, clock } = verifier();
      const sec = Math.floor(clock.t / 1000);
      const token = await sign(rsa, clock.t, { exp: sec + 600 });
      const first = await v.verify(token);
      const requests = server.requests;
      for (let i = 0; i < 5; i++) assert.deepEqual(await v.verify(token), first);
      assert.deepEqual(v.stats(), { cacheHits: 5, verified: 1, jwksFetches: 1 });
      assert.equal(server.requests, requests);
      clock.t = (sec + 600) * 1000;
      assert.deepEqual(await v.verify(token), first, 'at exp the entry is gone; within the leeway it verifies again');
      assert.equal(v.stats().verified, 2);
      clock.t += 61_000;
      assert.equal(await v.verify(token), null);
    });

    it('is bounded: past maxCached the oldest token is verified again', async () => {
      const { v, clock } = verifier({ maxCached: 2 });
      const tokens = await Promise.all(['a', 'b', 'c'].map((sub) => sign(ec, clock.t, { sub })));
      for (const t of tokens) assert.ok(await v.verify(t));
      assert.ok(await v.verify(tokens[2]!));
      assert.equal(v.stats().verified, 3, 'c still cached');
      assert.ok(await v.verify(tokens[0]!));
      assert.equal(v.stats().verified, 4, 'a was evicted');
    });
  });

  describe('a JWKS that cannot be fetched', () => {
    it('refuses uncached tokens once the set is stale, with a warning; keeps cached ones; retries once per window', async () => {
      const { log, lines } = capturedLog();
      const { v, clock } = verifier({ log });
      const cached = await sign(rsa, clock.t, { sub: 'cached' });
      assert.ok(await v.verify(cached));
      server.down = true;
      try {
        assert.ok(await v.verify(await sign(rsa, clock.t, { sub: 'fresh-set' })), 'a set fetched just now needs no fetch');
        const before = server.requests;
        clock.t += 600_000; // ten minutes: the set must be refetched before it is trusted again
        assert.equal(await v.verify(await sign(rsa, clock.t, { sub: 'new-1' })), null);
        assert.equal(server.requests - before, 1);
        assert.deepEqual(lines.map((l) => [l.level, l.msg]), [[40, 'JWKS fetch failed: JWTs that need a key from it are refused until a fetch succeeds']]);
        assert.equal((await v.verify(cached))?.sub, 'cached', 'a verified token is a cache hit until its exp');
        assert.equal(await v.verify(await sign(rsa, clock.t, { sub: 'new-2' })), null);
        assert.equal(server.requests - before, 1, 'no second fetch inside the window');
        server.down = false;
        clock.t += 30_000;
        assert.equal((await v.verify(await sign(rsa, clock.t, { sub: 'new-3' })))?.sub, 'new-3');
        assert.equal(server.requests - before, 2);
      } finally {
        server.down = false;
      }
    });

    it('a set ten minutes old is not trusted even while a failed refetch holds the next one back', async () => {
      const { v, clock } = verifier();
      assert.ok(await v.verify(await sign(rsa, clock.t, { sub: 'first' })));
      server.down = true;
      try {
        // A rotation check that fails shortly before the set's ten minutes are up opens a 30 s window.
        clock.t += 590_000;
        const rotated = await testKey('RS256', 'rotated-1');
        assert.equal(await v.verify(await sign(rotated, clock.t)), null);
        clock.t += 15_000;
        assert.equal(await v.verify(await sign(rsa, clock.t, { sub: 'stale' })), null, 'a token was accepted from a set 605 s old');
      } finally {
        server.down = false;
      }
    });

    it('a provider that refuses the connection gives null and a warning, not a crash', async () => {
      const closed = http.createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise<void>((resolve) => closed.close(() => resolve()));
      const { log, lines } = capturedLog();
      const { v, clock } = verifier({ jwksUrl: `http://127.0.0.1:${port}/certs`, log });
      assert.equal(await v.verify(await sign(ec, clock.t)), null);
      assert.equal(lines.length, 1);
      assert.match(JSON.stringify(lines[0]), /ECONNREFUSED|fetch failed/);
    });
  });
});
