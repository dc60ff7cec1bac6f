// The `css_active_runs` gauge reads the supervisor's counts (not a list of its runs): it must still say
// how many keyed runs of each kind, and how many runs in all, are active as runs start, end and die.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sseFrame } from '../../actors/runtime/frame.ts';
import { createHost } from '../../actors/runtime/host.ts';
import type { ToHost } from '../../actors/runtime/protocol.ts';
import { Supervisor, type HostFactory } from '../../actors/runtime/supervisor.ts';
import type { RunSupervisor } from '../../actors/runs.ts';
import { createMetrics } from '../../src/service/metrics.ts';
import { newRecoveredRuns } from '../../src/store/recovery.ts';
import { runners, turn } from './fake.ts';

type Kinds = { [K in 'chat' | 'search' | 'title']: { request: { until: Promise<void> | null }; value: { why: string | null } } };

/** A supervisor whose chat, search and title runs are the fake `hold` run: each goes on until stopped. */
function holdingSupervisor() {
  const kill: Array<(err: Error) => void> = [];
  const factory: HostFactory = (index, onBatch, onExit) => {
    const host = createHost({ chat: runners.hold, search: runners.hold, title: runners.hold }, null, onBatch);
    kill[index] = onExit;
    return { send: (m: ToHost) => host.receive(m), terminate: async () => {}, ready: Promise.resolve() };
  };
  const errorFrame = (message: string) => sseFrame('error', { message });
  const sup = new Supervisor<Kinds>({ hosts: 2, factory, errorFrames: { chat: errorFrame, search: errorFrame, title: errorFrame }, maxActiveRuns: 100, log: () => {} });
  return { sup, kill };
}

async function gauge(metrics: ReturnType<typeof createMetrics>): Promise<Record<string, number>> {
  const text = await metrics.registry.getSingleMetricAsString('css_active_runs');
  return Object.fromEntries([...text.matchAll(/css_active_runs\{kind="(\w+)"\} (\d+)/g)].map((m) => [m[1]!, Number(m[2])]));
}

test('css_active_runs counts the keyed runs of each kind and every run, as runs start, stop and die with their host', async () => {
  const { sup, kill } = holdingSupervisor();
  // The gauge reads only the supervisor's counts, which are the same whatever the kinds' types.
  const metrics = createMetrics(sup as unknown as RunSupervisor, { openCount: 0 }, newRecoveredRuns());
  assert.deepEqual(await gauge(metrics), { chat_persisted: 0, search: 0, title: 0, all: 0 });

  const start = (kind: keyof Kinds, key: string | null) => {
    const started = sup.start({ kind, key, request: { until: null }, ifRunning: 'reject' });
    assert.ok(started.ok);
    return started.handle;
  };
  const chat = start('chat', 'c1');
  start('chat', 'c2');
  start('chat', null); // a chat nobody can find again is not a persisted one
  start('search', 's1');
  start('title', 't1');
  assert.equal(sup.start({ kind: 'chat', key: 'c1', request: { until: null }, ifRunning: 'reject' }).ok, false, 'one run per key');
  assert.deepEqual(await gauge(metrics), { chat_persisted: 2, search: 1, title: 1, all: 5 });

  assert.equal(sup.stopNow('chat', 'c1'), true);
  await chat.result;
  assert.deepEqual(await gauge(metrics), { chat_persisted: 1, search: 1, title: 1, all: 4 });

  // A start for the key again after its run ended counts once more.
  start('chat', 'c1');
  assert.deepEqual(await gauge(metrics), { chat_persisted: 2, search: 1, title: 1, all: 5 });

  kill[0]!(new Error('boom'));
  kill[1]!(new Error('boom'));
  await turn();
  assert.deepEqual(await gauge(metrics), { chat_persisted: 0, search: 0, title: 0, all: 0 });
});
