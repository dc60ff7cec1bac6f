// Cluster mode's configuration: REDIS_URL unset is one process; set, it needs the shared Postgres;
// a bad value is named; the default lease expiry frees a dead instance's runs within 15 s.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/base/config.ts';

it('REDIS_URL: unset by default, validated, needs DATABASE_URL, and the default lease TTL is under 15 s', () => {
  assert.equal(loadConfig({}).REDIS_URL, undefined);
  const c = loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379/2', DATABASE_URL: 'postgres://x@h/db' });
  assert.equal(c.REDIS_URL, 'redis://127.0.0.1:6379/2');
  assert.ok(c.CLUSTER_LEASE_TTL_MS <= 15_000);
  assert.throws(() => loadConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }), (e: Error) => e instanceof ConfigError && /REDIS_URL .*needs DATABASE_URL/.test(e.message));
  assert.throws(() => loadConfig({ REDIS_URL: 'http://x', DATABASE_URL: 'postgres://x@h/db' }), /REDIS_URL: must be a redis/);
});

it('RUN_TAKEOVER: on by default with REDIS_URL, off without a cluster, and validated', () => {
  const cluster = { REDIS_URL: 'redis://127.0.0.1:6379', DATABASE_URL: 'postgres://x@h/db' };
  assert.equal(loadConfig(cluster).runTakeover, true);
  assert.equal(loadConfig({ ...cluster, RUN_TAKEOVER: 'false' }).runTakeover, false);
  assert.equal(loadConfig({}).runTakeover, false);
  assert.equal(loadConfig({ RUN_TAKEOVER: 'true' }).runTakeover, false, 'no peer to hand a run to');
  assert.throws(() => loadConfig({ ...cluster, RUN_TAKEOVER: 'maybe' }), (e: Error) => e instanceof ConfigError && /RUN_TAKEOVER/.test(e.message));
});
