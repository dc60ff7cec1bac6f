// process_open_fds read off the main thread (src/service/open-fds.ts): a scrape lists no directory
// itself, and the gauge still follows the descriptors the process opens.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import client from 'prom-client';
import { openFdsOffThread } from '../../src/service/open-fds.ts';
import { waitFor } from '../helpers/wait.ts';

const openFds = async (registry: client.Registry) => {
  const m = /^process_open_fds (\d+)$/m.exec(await registry.metrics());
  return m ? Number(m[1]) : -1;
};

test('a scrape reads /proc/self/fd on no thread of its own, and the count follows the descriptors opened', { skip: process.platform !== 'linux' }, async () => {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  openFdsOffThread(registry);
  const listed: string[] = [];
  const readdirSync = fs.readdirSync;
  fs.readdirSync = ((p: fs.PathLike, ...rest: unknown[]) => {
    listed.push(String(p));
    return (readdirSync as (...a: unknown[]) => unknown)(p, ...rest);
  }) as typeof fs.readdirSync;
  const opened: number[] = [];
  try {
    await waitFor(async () => (await openFds(registry)) > 0, 10_000, 'a first count');
    // The process's own count, listed by the test (not through the spy). A scrape reports the previous read's
    // count, which may hold descriptors that were open only then: compare with the count now, not with an earlier scrape.
    const actual = () => (readdirSync as (p: string) => string[])('/proc/self/fd').length - 1;
    const before = actual();
    for (let i = 0; i < 64; i++) opened.push(fs.openSync(import.meta.filename, 'r'));
    assert.ok(actual() >= before + 64);
    await waitFor(async () => Math.abs((await openFds(registry)) - actual()) <= 2, 30_000, 'the count to include the 64 opened');
    assert.deepEqual(listed.filter((p) => p.startsWith('/proc')), [], 'no synchronous listing during a scrape');
  } finally {
    fs.readdirSync = readdirSync;
    for (const fd of opened) fs.closeSync(fd);
  }
});
