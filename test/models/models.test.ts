// GET /v1/models and the model registry, against the simulator's real list endpoints: loading at
// start without holding the start up, the 24-hour refresh (with a clock the test moves), keeping the
// last list on failure, provider_d only with its key, and providers without a key.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/base/config.ts';
import { createModelRegistry, ModelRegistry } from '../../src/models/registry.ts';
import { createProviders } from '../../src/providers/index.ts';
import { simEnv, startTestServer, waitFor, type TestServer } from '../helpers/server.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

const HOUR = 60 * 60 * 1000;

class MovableClock {
  offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
}

/** A TCP server that accepts connections and never answers: the slowest provider there is. */
async function startSilentServer(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

const PROVIDER_A_EXPECTED = ['gpt-4.1-nano', 'sim-a-large', 'sim-a-mini', 'sim-a-nano'];

describe('GET /v1/models with every provider configured', () => {
  let t: TestServer;
  const clock = new MovableClock();
  before(async () => {
    t = await startTestServer({ clock, env: { AGENT_PROVIDER_MODEL: 'agent-extra' } });
  });
  after(() => t.close());

  const models = async () => (await t.call('GET', '/v1/models')).body.providers;
  const listCalls = (prefix: string) => t.sim.requests.filter((r) => r.method === 'GET' && r.path.startsWith(prefix) && r.path.endsWith('/models')).length;

  it('loads every list at start; provider_a filtered, provider_d with AGENT_PROVIDER_MODEL', async () => {
    await waitFor(async () => Object.values(await models()).every((p: any) => p.loadedAt !== null), 10_000, 'all lists');
    const p = await models();
    assert.deepEqual(Object.keys(p), ['provider_a', 'provider_b', 'provider_c', 'provider_d']);
    assert.deepEqual(p.provider_a.models, PROVIDER_A_EXPECTED);
    assert.deepEqual(p.provider_b.models, ['sim-b-large', 'sim-b-small', 'sim-b-haiku']);
    assert.deepEqual(p.provider_c.models, ['sim-c-large', 'sim-c-small']);
    assert.deepEqual(p.provider_d.models, ['agent-extra', 'sim-d-agent', 'sim-d-small']);
    for (const entry of Object.values(p) as any[]) {
      assert.equal(entry.error, null);
      assert.match(entry.loadedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
  });

  it('does not reload before 24 hours, reloads after', async () => {
    await waitFor(async () => (await models()).provider_a.loadedAt !== null, 10_000, 'first load');
    const first = await models();
    const calls = listCalls('/provider-a/');
    clock.offset = 23 * HOUR;
    await models();
    // The read above decided whether a refresh was due; this settles once any load it started has
    // (its list request logged by the simulator by then), so nothing can come later.
    await t.server.ctx.models.refreshDue();
    assert.equal(listCalls('/provider-a/'), calls, 'no refresh within the interval');

    clock.offset = 24 * HOUR + 1000;
    await models(); // a read notices the refresh is due and starts it without waiting for it
    await waitFor(async () => (await models()).provider_a.loadedAt !== first.provider_a.loadedAt, 10_000, 'the refresh');
    const p = await models();
    assert.equal(listCalls('/provider-a/'), calls + 1);
    assert.ok(Date.parse(p.provider_a.loadedAt) >= Date.now() + 24 * HOUR, 'loadedAt comes from the moved clock');
    assert.deepEqual(p.provider_a.models, PROVIDER_A_EXPECTED);
    await waitFor(async () => Object.entries(await models()).every(([name, e]: [string, any]) => e.loadedAt !== first[name].loadedAt), 10_000, 'all refreshed');
  });

  it('a failed refresh keeps the last list and sets error; the next good load clears it', async () => {
    await waitFor(async () => Object.values(await models()).every((e: any) => e.loadedAt !== null), 10_000, 'lists');
    const before = await models();
    const control = await fetch(`http://127.0.0.1:${t.sim.port}/__control`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ failModels: ['provider_a', 'provider_d'] }),
    });
    assert.equal(control.status, 200);
    try {
      clock.offset += 24 * HOUR + 1000;
      await models();
      await waitFor(async () => {
        const p = await models();
        return p.provider_a.error !== null && p.provider_d.error !== null && p.provider_c.loadedAt !== before.provider_c.loadedAt;
      }, 15_000, 'the failed refresh');
      const p = await models();
      assert.match(p.provider_a.error, /^provider_a error 500: .*simulated models failure/);
      assert.deepEqual(p.provider_a.models, before.provider_a.models);
      assert.equal(p.provider_a.loadedAt, before.provider_a.loadedAt);
      // provider_d's listing failure is reported too, not papered over by AGENT_PROVIDER_MODEL.
      assert.match(p.provider_d.error, /^provider_d error 500/);
      assert.deepEqual(p.provider_d.models, before.provider_d.models);
      // The others were not held back by the failing ones.
      assert.equal(p.provider_c.error, null);
      assert.equal(p.provider_b.error, null);
    } finally {
      await fetch(`http://127.0.0.1:${t.sim.port}/__control`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ failModels: [] }),
      });
    }
    // Failed providers retry sooner than a day (15 minutes).
    const failedAt = (await models()).provider_a;
    clock.offset += 16 * 60 * 1000;
    await models();
    await waitFor(async () => (await models()).provider_a.error === null, 10_000, 'the retry');
    const p = await models();
    assert.notEqual(p.provider_a.loadedAt, failedAt.loadedAt);
    assert.deepEqual(p.provider_a.models, PROVIDER_A_EXPECTED);
  });
});

describe('GET /v1/models with missing keys and a provider that never answers', () => {
  let t: TestServer;
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  before(async () => {
    silent = await startSilentServer();
    t = await startTestServer({ env: { PROVIDER_B_API_KEY: '', AGENT_PROVIDER_API_KEY: '', PROVIDER_C_BASE_URL: silent.url } });
  });
  after(async () => {
    await t.close();
    await silent.close();
  });

  it('lists provider_b with an error naming its variable, and no provider_d', async () => {
    const p = (await t.call('GET', '/v1/models')).body.providers;
    assert.deepEqual(Object.keys(p), ['provider_a', 'provider_b', 'provider_c']);
    assert.deepEqual(p.provider_b, { models: [], loadedAt: null, error: 'provider_b is not configured: set PROVIDER_B_API_KEY' });
  });

  it('a provider that never answers delays neither the start nor the other lists', async () => {
    // PROVIDER_TIMEOUT_MS is 30 s in tests: a start that waited for provider_c would find its list
    // timed out (an error) by now, not still loading as asserted below.
    await waitFor(async () => (await t.call('GET', '/v1/models')).body.providers.provider_a.loadedAt !== null, 10_000, 'provider_a');
    const p = (await t.call('GET', '/v1/models')).body.providers;
    assert.deepEqual(p.provider_a.models, PROVIDER_A_EXPECTED);
    assert.deepEqual(p.provider_c, { models: [], loadedAt: null, error: null });
  });
});

describe('GET /v1/models with the simulator serving unkeyed providers (SIMULATE=auto)', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer({ env: { SIMULATE: 'auto', AGENT_PROVIDER_API_KEY: '', PROVIDER_B_API_KEY: '' } });
  });
  after(() => t.close());

  it('lists provider_d without AGENT_PROVIDER_API_KEY only as simulated, and says so', async () => {
    await waitFor(async () => (await t.call('GET', '/v1/models')).body.providers.provider_d?.loadedAt !== null, 10_000, 'provider_d');
    const p = (await t.call('GET', '/v1/models')).body.providers;
    assert.deepEqual(p.provider_d.models, ['sim-d-agent', 'sim-d-small']);
    assert.equal(p.provider_d.simulated, true, 'marked: the spec lists provider_d only with its key');
    assert.equal(p.provider_b.simulated, true);
    assert.equal('simulated' in p.provider_a, false, 'a keyed provider carries no mark');
    assert.equal('simulated' in p.provider_c, false);
  });
});

describe('the model registry', () => {
  let sim: SimHandle;
  let silent: Awaited<ReturnType<typeof startSilentServer>>;
  before(async () => {
    sim = await startSimulator();
    silent = await startSilentServer();
  });
  after(async () => {
    await sim.close();
    await silent.close();
  });

  it('adds AGENT_PROVIDER_MODEL once when the endpoint already lists it', async () => {
    const config = loadConfig({ ...simEnv(sim), AGENT_PROVIDER_MODEL: 'sim-d-small' });
    const registry = createModelRegistry(config, createProviders(config), { now: () => Date.now() });
    try {
      await registry.refreshAll();
      assert.deepEqual(registry.snapshot().provider_d!.models, ['sim-d-small', 'sim-d-agent']);
    } finally {
      registry.stop();
    }
  });

  it('times a slow provider out with a clear error while the others load', async () => {
    const config = loadConfig({ ...simEnv(sim), PROVIDER_C_BASE_URL: silent.url });
    const providers = createProviders(config);
    const listers = new Map([...providers].map(([name, a]) => [name, (s: AbortSignal) => a.listModels(s)] as const));
    const registry = new ModelRegistry({ listers, unconfigured: [], clock: { now: () => Date.now() }, timeoutMs: 300 });
    try {
      await registry.refreshAll();
      const p = registry.snapshot();
      assert.equal(p.provider_c!.error, 'provider_c model list timed out after 300 ms');
      assert.equal(p.provider_c!.loadedAt, null);
      assert.deepEqual(p.provider_a!.models, PROVIDER_A_EXPECTED);
      assert.equal(p.provider_a!.error, null);
    } finally {
      registry.stop();
    }
  });
});
