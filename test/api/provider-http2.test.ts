// The real entry point against an https provider: PROVIDER_HTTP2 reaches the provider clients. With the
// default the service speaks HTTP/2 to an origin that offers it, and its streams share one connection;
// with PROVIDER_HTTP2=false it speaks HTTP/1.1. The service trusts the simulator's self-signed
// certificate through NODE_EXTRA_CA_CERTS, as a deployment behind a private CA would. A cleartext
// origin listed in PROVIDER_H2C_ORIGINS gets HTTP/2 with prior knowledge (h2c) the same way.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';
import { scratchDatabaseEnv } from '../helpers/drain.ts';
import { simCompletion, startService, stopService } from '../helpers/process.ts';
import { readSse, sim, simEnv } from '../helpers/server.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';

/** Three streams at once through a fresh service with `extra` in its environment; what the provider saw of each. */
async function streamThree(simh: SimHandle, extra: Record<string, string>) {
  const { env, cleanup } = await scratchDatabaseEnv();
  const service = await startService({ ...simEnv(simh), ...env, PORT: '0', ACTOR_THREADS: '1', ...extra });
  try {
    simh.clearRequests();
    const texts = await Promise.all([1, 2, 3].map(async (i) => {
      const res = await fetch(`${service.url}/v1/chat-completions/stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: simCompletion(sim({ deltas: 40, rate: 20 }, `answer ${i}`), { persist: false }),
      });
      assert.equal(res.status, 200);
      const events = await readSse(res, new AbortController());
      assert.equal(events.at(-1)!.event, 'done', JSON.stringify(events.at(-1)));
      return events.at(-1)!.data.text as string;
    }));
    const calls = simh.requests.filter((r) => r.upstream === 'provider_c' && r.method === 'POST');
    return { texts, calls };
  } finally {
    assert.equal(await stopService(service), 0, service.output());
    await cleanup();
  }
}

describe('PROVIDER_HTTP2 in the service process', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'css-h2-'));
  const { key, cert, certFile } = selfSignedCertificate(dir);
  let simh: SimHandle;
  before(async () => {
    simh = await startSimulator({ tls: { key, cert } });
  });
  after(async () => {
    await simh.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is on by default: HTTP/2 toward an https origin that offers it', async () => {
    const { texts, calls } = await streamThree(simh, { NODE_EXTRA_CA_CERTS: certFile });
    assert.deepEqual(texts.map((t) => t.length > 0), [true, true, true]);
    assert.deepEqual(calls.map((c) => c.httpVersion), ['2.0', '2.0', '2.0']);
    assert.equal(new Set(calls.map((c) => c.remotePort)).size, 1, 'one connection carries the three streams');
  });

  it('PROVIDER_HTTP2=false keeps every call on HTTP/1.1', async () => {
    const { texts, calls } = await streamThree(simh, { NODE_EXTRA_CA_CERTS: certFile, PROVIDER_HTTP2: 'false' });
    assert.deepEqual(texts.map((t) => t.length > 0), [true, true, true]);
    assert.deepEqual(calls.map((c) => c.httpVersion), ['1.1', '1.1', '1.1']);
    assert.equal(new Set(calls.map((c) => c.remotePort)).size, 3, 'a connection per open stream');
  });
});

describe('PROVIDER_H2C_ORIGINS in the service process', () => {
  let h2c: SimHandle;
  before(async () => {
    h2c = await startSimulator({ h2c: true });
  });
  after(() => h2c.close());

  it('speaks HTTP/2 without TLS to a listed origin: its streams share one connection', async () => {
    const { texts, calls } = await streamThree(h2c, { PROVIDER_H2C_ORIGINS: new URL(h2c.urls.provider_c).origin });
    assert.deepEqual(texts.map((t) => t.length > 0), [true, true, true]);
    assert.deepEqual(calls.map((c) => c.httpVersion), ['2.0', '2.0', '2.0']);
    assert.equal(new Set(calls.map((c) => c.remotePort)).size, 1, 'one connection carries the three streams');
  });
});
