// A local identity provider for the JWT tests: keys generated here, a JWKS served over real HTTP on
// 127.0.0.1, every request counted, and tokens signed with any of the keys.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';
import pino from 'pino';

export interface TestKey {
  kid: string;
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function testKey(alg: 'RS256' | 'ES256' | 'RS384', kid: string): Promise<TestKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg);
  return { kid, alg, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

export interface JwksServer {
  url: string;
  /** JWKS requests received so far. */
  readonly requests: number;
  /** The keys served; change it to rotate. */
  keys: TestKey[];
  /** While true the server answers 503, as a provider in trouble does. */
  down: boolean;
  close(): Promise<void>;
}

export async function startJwksServer(keys: TestKey[]): Promise<JwksServer> {
  let requests = 0;
  const server = http.createServer((_req, res) => {
    requests++;
    if (jwks.down) return void res.writeHead(503).end('unavailable');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: jwks.keys.map((k) => k.jwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const jwks: JwksServer = {
    url: `http://127.0.0.1:${port}/realms/test/protocol/openid-connect/certs`,
    get requests() {
      return requests;
    },
    keys,
    down: false,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return jwks;
}

export const ISSUER = 'https://idp.example/realms/test';
export const AUDIENCE = 'conversation-search';

/** A token signed by `key`, valid for an hour from `nowMs` unless `claims` says otherwise. */
export function sign(key: TestKey, nowMs: number, claims: JWTPayload = {}, header: { kid?: string } = {}): Promise<string> {
  const iat = Math.floor(nowMs / 1000);
  return new SignJWT({ sub: 'user-1', iss: ISSUER, aud: AUDIENCE, iat, exp: iat + 3600, ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
    .sign(key.privateKey);
}

/** A real pino logger whose lines the test can read. */
export function capturedLog(): { log: pino.Logger; lines: Array<{ level: number; msg: string }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { log: pino({ level: 'warn' }, sink), lines };
}
