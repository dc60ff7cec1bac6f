// Breakers shared by the cluster: two instances (processes) on one Redis. Failed calls made through one
// instance open the provider's breaker, and the other instance then refuses at once with 503, the
// message and Retry-After, without calling the provider (the simulator's request log says so).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { clusterSuite, type Instance } from '../helpers/cluster.ts';
import { sim } from '../helpers/server.ts';

const ask = (content: string) => ({ provider: 'provider_c', model: 'sim-c-small', enabledTools: [], messages: [{ role: 'user', content }] });

describe('provider breakers in cluster mode: two instances', async () => {
  const suite = await clusterSuite({ n: 2, env: { PROVIDER_RETRIES: '0', PROVIDER_BREAKER_FAILURES: '2', PROVIDER_BREAKER_OPEN_MS: '60000' } });
  if (!suite) return;
  let a: Instance, b: Instance;
  before(() => {
    [a, b] = suite.cluster.instances as [Instance, Instance];
  });

  it('a breaker opened by one instance refuses on the other, which never calls the provider', async () => {
    suite.sim.clearRequests();
    for (let i = 0; i < 2; i++) assert.equal((await a.call('POST', '/v1/chat-completions', ask(sim({ status: 503 }, `fail ${i}`)))).status, 502);
    assert.equal(suite.sim.calls('provider_c'), 2);
    const refused = await b.call('POST', '/v1/chat-completions', ask(sim({ reply: 'not asked' })));
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.deepEqual(refused.body, { message: 'provider_c is unavailable, retry later' });
    const wait = Number(refused.headers.get('retry-after'));
    assert.ok(wait > 0 && wait <= 60, `Retry-After ${wait}`);
    assert.equal(suite.sim.calls('provider_c'), 2);
    // Per provider and model: the same provider's other model still answers on both.
    const other = await b.call('POST', '/v1/chat-completions', { ...ask(sim({ reply: 'large answers' })), model: 'sim-c-large' });
    assert.equal(other.status, 200);
  });
});
