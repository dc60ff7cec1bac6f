// A free loopback port: bound, read, released. A port may be taken again before it is used, so callers
// that can pass 0 to the server itself should.
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

// Below Linux's ephemeral range (net.ipv4.ip_local_port_range, 32768–60999 by default): a port the kernel never
// hands to an outgoing connection, so a server restarted on it (a rolling restart) does not find it taken by
// one of the other test processes' client sockets in between.
const STABLE_LOW = 20_000;
const STABLE_SPAN = 12_000;

/** A free loopback port that stays free across a restart of its server: bound, released, outside the ephemeral range. */
export async function stablePort(): Promise<number> {
  for (;;) {
    const port = STABLE_LOW + Math.floor(Math.random() * STABLE_SPAN);
    if (await canListen(port)) return port;
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}
