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
    const before = await openFds(registry);
    for (let i = 0; i < 64; i++) opened.push(fs.openSync(import.meta.filename, 'r'));
    await waitFor(async () => (await openFds(registry)) >= before + 64, 10_000, 'the count to include the 64 opened');
    assert.deepEqual(listed.filter((p) => p.startsWith('/proc')), [], 'no synchronous listing during a scrape');
  } finally {
    fs.readdirSync = readdirSync;
    for (const fd of opened) fs.closeSync(fd);
  }
});
