// One HTTP exchange over a raw socket, for requests no HTTP client would send (HTTP/1.0, no Host,
// odd header names, malformed request lines). Reads until the server closes, the response is complete
// (Content-Length reached, or a chunked body's last chunk), or the timeout.
import net from 'node:net';

export interface RawResult {
  /** Status code of the first response, or null when nothing that looks like HTTP came back. */
  status: number | null;
  head: string;
  body: string;
  /** The response was complete (by its length, its last chunk, or the close of an HTTP/1.0-style body). */
  complete: boolean;
  timedOut: boolean;
}

function completeness(head: string, body: Buffer, closed: boolean): boolean {
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) return body.length >= Number(length[1]);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) return /(^|\r\n)0\r\n\r\n$/.test(body.toString('latin1'));
  return closed;
}

export function rawExchange(port: number, request: string | Buffer, timeoutMs = 5000): Promise<RawResult> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let finished = false;
    const finish = (closed: boolean, timedOut: boolean) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      sock.destroy();
      const text = buf.toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const bodyBytes = split < 0 ? Buffer.alloc(0) : buf.subarray(split + 4);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({
        status: m ? Number(m[1]) : null,
        head,
        body: bodyBytes.toString('utf8'),
        complete: split >= 0 && completeness(head, bodyBytes, closed),
        timedOut,
      });
    };
    const timer = setTimeout(() => finish(false, true), timeoutMs);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const split = buf.indexOf('\r\n\r\n');
      if (split >= 0 && completeness(buf.subarray(0, split).toString('latin1'), buf.subarray(split + 4), false)) finish(false, false);
    });
    sock.on('close', () => finish(true, false));
    sock.on('error', () => finish(true, false));
    sock.write(request);
  });
}
