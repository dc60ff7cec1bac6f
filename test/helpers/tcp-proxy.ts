// A TCP proxy that can black-hole its traffic, as a network partition looks to both ends: after
// `blackhole()` nothing is forwarded either way and nothing is closed or reset, so each side only
// learns of it from its own timeouts. New connections are accepted and then hear nothing.
import net from 'node:net';

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1. */
  port: number;
  /** From now on every byte, both ways and on every connection, is dropped. */
  blackhole(): void;
  /** Closes every connection, and every new one at once, until `restore` (a server gone for a moment). */
  drop(): void;
  restore(): void;
  close(): Promise<void>;
}

/** `connections`: how many connections it forwards; every later one is closed at once (a server reached once, then gone). */
export async function startTcpProxy(target: { host: string; port: number }, opts: { connections?: number } = {}): Promise<TcpProxy> {
  let forwarded = 0;
  let cut = false;
  let dropping = false;
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  // Forwards by hand (not pipe) so that a cut drops data instead of buffering it for later.
  const forward = (from: net.Socket, to: net.Socket) => {
    from.on('data', (chunk) => {
      if (!cut) to.write(chunk);
    });
    from.on('end', () => {
      if (!cut) to.end();
    });
  };
  const server = net.createServer((client) => {
    if (dropping || forwarded++ >= (opts.connections ?? Infinity)) return void client.destroy();
    track(client);
    if (cut) return;
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => cut || upstream.destroy());
    upstream.on('close', () => cut || client.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    blackhole() {
      cut = true;
    },
    drop() {
      dropping = true;
      for (const s of sockets) s.destroy();
    },
    restore() {
      dropping = false;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
