// The ledger's SSE client, in its own process: `node --import tsx sse-client.ts <port>` then one job per
// stdin line {"path", "requests", "connections", "body"?}; it sends `requests` GETs (POSTs with `body`) over `connections` keep-alive
// sockets (one in flight per socket), reads each chunked answer to its end, and prints {"done": n}.
import net from 'node:net';
import { createInterface } from 'node:readline';

const port = Number(process.argv[2]);
const END = '\r\n0\r\n\r\n';

function lane(path: string, body: string | undefined, count: () => boolean): Promise<void> {
  const request = body === undefined
    ? `GET ${path} HTTP/1.1\r\nhost: ledger\r\n\r\n`
    : `POST ${path} HTTP/1.1\r\nhost: ledger\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
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

createInterface({ input: process.stdin }).on('line', async (line) => {
  const job = JSON.parse(line) as { path: string; requests: number; connections: number; body?: string };
  let left = job.requests;
  await Promise.all(Array.from({ length: job.connections }, () => lane(job.path, job.body, () => left-- > 0)));
  process.stdout.write(JSON.stringify({ done: job.requests }) + '\n');
});
