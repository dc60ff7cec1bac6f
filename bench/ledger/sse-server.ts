// The SSE side of the ledger: a uWS server in this process answering the way the service answers a
// start, with a client in its own process (sse-client.ts) so that only the server's work counts here.
//   /separate: status + headers + meta in one cork, then the delta, `done` and the end each in a cork of
//              its own on later event-loop turns (one socket write each: what a short run costs today)
//   /corked:   the same bytes in one cork (one socket write); as a POST, after reading the request body
//   /deltas:   status + headers, then DELTAS delta frames one cork each, then the end: a delta's client write
import { uws, type HttpResponse } from '../../src/http/uws.ts';
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';

export const DELTAS = 200;
const META = sseFrame('meta', { chatId: '6c0b2a4e-3f55-4c3e-9b0e-0f6c2f1f9a11', runId: 'b1c4f2d0-9a7e-4f1e-8d2b-5b4f6a3c2e10', persist: true });
const DELTA = deltaFrame('1764069999123.456|');
const DONE = sseFrame('done', { text: '1764069999123.456|', finishReason: 'stop', usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } });
export const START_FRAMES = [META, DELTA, DONE] as const;

function head(res: HttpResponse): void {
  res.writeStatus('200 OK');
  res.writeHeader('content-type', 'text/event-stream');
  res.writeHeader('cache-control', 'no-cache');
  res.writeHeader('x-accel-buffering', 'no');
}

/** Runs `steps` one per event-loop turn, each in a cork, unless the client went away. */
function turns(res: HttpResponse, steps: Array<() => void>): void {
  let gone = false;
  res.onAborted(() => (gone = true));
  let i = 0;
  const next = (): void => {
    if (gone) return;
    res.cork(steps[i++]!);
    if (i < steps.length) setImmediate(next);
  };
  next();
}

export function startSseServer(): Promise<{ port: number; close(): void }> {
  const app = uws.App();
  app.get('/separate', (res) => turns(res, [() => (head(res), res.write(META)), () => res.write(DELTA), () => res.write(DONE), () => res.end()]));
  app.get('/corked', (res) => turns(res, [() => (head(res), res.write(META), res.write(DELTA), res.write(DONE), res.end())]));
  // The start's request as the service gets it: a POST whose JSON body arrives through onData.
  app.post('/corked', (res) => {
    let body = '';
    res.onAborted(() => undefined);
    res.onData((chunk, last) => {
      body += Buffer.from(chunk).toString('utf8');
      if (last) turns(res, [() => (head(res), res.write(META), res.write(DELTA), res.write(DONE), res.end())]);
    });
  });
  app.get('/deltas', (res) => turns(res, [() => head(res), ...Array.from({ length: DELTAS }, () => () => void res.write(DELTA)), () => res.end()]));
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (socket) => {
      if (!socket) return reject(new Error('uWS did not listen'));
      resolve({ port: uws.us_socket_local_port(socket), close: () => uws.us_listen_socket_close(socket) });
    });
  });
}
