// The ledger's SSE client, in its own process: `node --import tsx sse-client.ts <port>` then one job per
// stdin line {"path", "requests", "connections", "body"?, "close"?}; it sends `requests` GETs (POSTs with `body`) over `connections` keep-alive
// sockets (one in flight per socket), reads each chunked answer to its end, and prints {"done": n}. With
// `close` each request has a connection of its own (`connection: close`), as the bench's generator does.
import net from 'node:net';
import { createInterface } from 'node:readline';

const port = Number(process.argv[2]);
const END = '\r\n0\r\n\r\n';

function requestText(path: string, body: string | undefined, close: boolean): string {
  const conn = close ? 'connection: close\r\n' : '';
  return body === undefined
    ? `GET ${path} HTTP/1.1\r\nhost: ledger\r\n${conn}\r\n`
    : `POST ${path} HTTP/1.1\r\nhost: ledger\r\n${conn}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

function lane(path: string, body: string | undefined, count: () => boolean): Promise<void> {
  const request = requestText(path, body, false);
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    let tail = '';
    const ask = () => {
      if (!count()) return sock.end(resolve);
      tail = '';
      sock.write(request);
    };
    sock.setEncoding('latin1');
    sock.on('connect', ask);
    sock.on('data', (d: string) => {
      tail = (tail + d).slice(-16);
      if (tail.endsWith(END)) ask();
    });
    sock.on('error', reject);
  });
}

/** One request on a connection of its own; done when the server has closed it after the answer. */
function once(request: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(request));
    sock.resume();
    sock.on('close', () => resolve());
    sock.on('error', reject);
  });
}

createInterface({ input: process.stdin }).on('line', async (line) => {
  const job = JSON.parse(line) as { path: string; requests: number; connections: number; body?: string; close?: boolean };
  let left = job.requests;
  const closing = async () => {
    const request = requestText(job.path, job.body, true);
    while (left-- > 0) await once(request);
  };
  await Promise.all(Array.from({ length: job.connections }, () => (job.close ? closing() : lane(job.path, job.body, () => left-- > 0))));
  process.stdout.write(JSON.stringify({ done: job.requests }) + '\n');
});
