// `process_open_fds` without stalling the main thread. prom-client's own lists /proc/self/fd
// synchronously at each scrape: with thousands of connections open (a flood of starts) that is tens
// of milliseconds per scrape in which no stream's frame leaves (the flood row's profile: a quarter
// of the main thread's busy time at 2,500 starts/s, scraped 4 times a second). Here the list is read
// on libuv's pool and a scrape reports the count the previous read found, starting the next.
import { readdir } from 'node:fs';
import client from 'prom-client';

const NAME = 'process_open_fds';

/** Replaces prom-client's `process_open_fds` in `registry` (registered by collectDefaultMetrics) with one read off the thread. */
export function openFdsOffThread(registry: client.Registry): void {
  if (process.platform !== 'linux' || registry.getSingleMetric(NAME) === undefined) return;
  registry.removeSingleMetric(NAME);
  let count = -1;
  let reading = false;
  const read = () => {
    if (reading) return;
    reading = true;
    readdir('/proc/self/fd', (err, names) => {
      reading = false;
      // Less the descriptor the read itself held open.
      if (!err) count = names.length - 1;
    });
  };
  read();
  new client.Gauge({
    name: NAME,
    help: 'Number of open file descriptors (as the previous scrape found them: read off the main thread)',
    registers: [registry],
    collect() {
      read();
      if (count >= 0) this.set(count);
    },
  });
}
