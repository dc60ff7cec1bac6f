// HTTP/2 toward a provider behind a production HTTP/2 server: nginx terminates TLS and relays to the
// simulator, as provider front ends do. It limits streams per connection (SETTINGS) and requests per
// connection: past `keepalive_requests` it sends GOAWAY, the graceful connection rotation the transport
// is built to survive. Every stream must end whole with no retry by the SDK (maxRetries 0), and nginx's
// access log says which connection and protocol each request came on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startSimulator } from '../../src/sim/server.ts';
import { ensureNginx, freePort } from '../helpers/nginx.ts';
import { startNginx, type Nginx } from '../helpers/nginx.ts';
import { selfSignedCertificate } from '../helpers/tls.ts';
import { collect, httpsAdapter, request, type Sim } from './helpers.ts';
import { waitFor } from '../helpers/wait.ts';

const STREAMS_PER_CONNECTION = 8;
const REQUESTS_PER_CONNECTION = 5;
const REPLY = 'one two three four five six';

describe('HTTP/2 toward a provider behind nginx', () => {
  if (!ensureNginx()) {
    it('needs nginx', { skip: 'nginx is not installed and could not be' }, () => {});
    return;
  }
  let sim: Sim;
  let nginx: Nginx;
  let base: string;
  let cert: string;

  before(async () => {
    sim = await startSimulator();
    const port = await freePort();
    const upstream = new URL(sim.urls.provider_c);
    const started = await startNginx(port, (dir) => {
      const tls = selfSignedCertificate(dir);
      cert = tls.cert;
      return `log_format conn '$connection $server_protocol $status';
  access_log ${dir}/access.log conn;
  server {
    listen 127.0.0.1:${port} ssl http2;
    ssl_certificate ${tls.certFile};
    ssl_certificate_key ${tls.keyFile};
    http2_max_concurrent_streams ${STREAMS_PER_CONNECTION};
    keepalive_requests ${REQUESTS_PER_CONNECTION};
    location / {
      proxy_pass http://${upstream.host};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }
  }`;
    });
    nginx = started!;
    base = `https://127.0.0.1:${port}${upstream.pathname}`;
  });
  after(async () => {
    await nginx?.stop();
    await sim?.close();
  });

  /** Each request nginx relayed since `from` lines: its connection number and protocol. */
  const relayed = (from: number) =>
    readFileSync(path.join(nginx.dir, 'access.log'), 'utf8').trim().split('\n').filter(Boolean).slice(from).map((l) => {
      const [conn, protocol, status] = l.split(' ');
      return { conn: conn!, protocol: protocol!, status: status! };
    });
  const logged = () => relayed(0).length;

  it('40 concurrent streams: every one whole, over HTTP/2, no connection past its stream and request limits', async () => {
    const from = logged();
    const provider = httpsAdapter(base, cert);
    const results = await Promise.all(Array.from({ length: 40 }, () => collect(provider.startSession(request({ reply: REPLY, deltas: 6, rate: 30 })))));
    for (const r of results) assert.deepEqual([r.text, r.end.finishReason], [REPLY, 'stop']);
    await waitFor(() => relayed(from).length >= 40, 10_000, "nginx's access-log lines of the 40 streams");
    const lines = relayed(from);
    assert.equal(lines.length, 40);
    assert.deepEqual([...new Set(lines.map((l) => `${l.protocol} ${l.status}`))], ['HTTP/2.0 200']);
    const perConnection = new Map<string, number>();
    for (const l of lines) perConnection.set(l.conn, (perConnection.get(l.conn) ?? 0) + 1);
    assert.ok(Math.max(...perConnection.values()) <= REQUESTS_PER_CONNECTION, `requests per connection: ${[...perConnection.values()]}`);
  });

  it('answers far larger than HTTP/2 flow-control windows arrive whole on one connection', async () => {
    const from = logged();
    const provider = httpsAdapter(base, cert);
    // 129 KB of text per answer, sent at full speed: twice the 64 KB initial stream and connection windows.
    const big = Array.from({ length: 20_000 }, (_, i) => `w${i}`).join(' ');
    const results = await Promise.all(Array.from({ length: 3 }, () => collect(provider.startSession(request({ reply: big, deltas: 400, rate: 0 })))));
    for (const r of results) assert.deepEqual([r.text.length, r.text === big, r.deltas], [big.length, true, 400]);
    assert.equal(new Set(relayed(from).map((l) => l.conn)).size, 1, 'the three shared one connection');
  });

  it('streams started one after another while nginx rotates connections: none fails', async () => {
    const from = logged();
    const provider = httpsAdapter(base, cert);
    // Three at a time, so a wave's streams are open when the connection reaches its request limit.
    for (let wave = 0; wave < 6; wave++) {
      const results = await Promise.all(Array.from({ length: 3 }, () => collect(provider.startSession(request({ reply: REPLY, deltas: 3, rate: 50 })))));
      for (const r of results) assert.equal(r.text, REPLY);
    }
    // nginx writes a request's access-log line once it has finished it, which can follow the client's end.
    await waitFor(() => relayed(from).length >= 18, 10_000, "nginx's access-log lines of the 18 streams");
    const lines = relayed(from);
    assert.equal(lines.length, 18);
    assert.ok(new Set(lines.map((l) => l.conn)).size >= Math.ceil(18 / REQUESTS_PER_CONNECTION), 'nginx rotated the connections');
  });
});
