// The SSE side of the ledger: a uWS server in this process answering the way the service answers a
// start, with a client in its own process (sse-client.ts) so that only the server's work counts here.
//   /separate: status + headers + meta in one cork, then the delta, `done` and the end each in a cork of
//              its own on later event-loop turns (one socket write each: what a short run costs today)
//   /stream:   status + headers, then one delta frame every 50 ms (20/s) from a 1 ms ticker shared by
//              every open /stream response, as the main thread writes each millisecond's batch; ends after
//              STREAM_FRAMES frames. `frames` counts what was written, for a per-frame figure over a window.
import { uws, type HttpResponse } from '../../src/http/uws.ts';
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';

const META = sseFrame('meta', { chatId: '6c0b2a4e-3f55-4c3e-9b0e-0f6c2f1f9a11', runId: 'b1c4f2d0-9a7e-4f1e-8d2b-5b4f6a3c2e10', persist: true });
const DELTA = deltaFrame('1764069999123.456|');
const DONE = sseFrame('done', { text: '1764069999123.456|', finishReason: 'stop', usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 } });

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

/** Frames of a /stream response: 8 s at 20/s, long enough for every stream of the row to be open at once. */
export const STREAM_FRAMES = 160;
const STREAM_SLOTS = 50;

/**
 * The /stream responses, in 50 slots of a 50 ms cycle: each tick of a 1 ms ticker writes one slot's. The
 * ticker runs only while a /stream response is open, so the other rows' figures do not carry it.
 */
function streamTicker(): { add(res: HttpResponse): void; frames(): number; open(): number; stop(): void } {
  const slots: Array<Array<{ res: HttpResponse; left: number; gone: boolean }>> = Array.from({ length: STREAM_SLOTS }, () => []);
  let open = 0;
  let added = 0;
  let tick = 0;
  let written = 0;
  let timer: NodeJS.Timeout | null = null;
  const onTick = () => {
    const slot = slots[tick++ % STREAM_SLOTS]!;
    for (let i = slot.length - 1; i >= 0; i--) {
      const s = slot[i]!;
      if (!s.gone) {
        s.res.cork(() => {
          s.res.write(DELTA);
          written++;
          if (--s.left === 0) s.res.end();
        });
      }
      if (s.gone || s.left === 0) {
        slot.splice(i, 1);
        if (--open === 0) stop();
      }
    }
  };
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = null;
  };
  return {
    add(res) {
      const s = { res, left: STREAM_FRAMES, gone: false };
      res.onAborted(() => (s.gone = true));
      res.cork(() => head(res));
      slots[added++ % STREAM_SLOTS]!.push(s);
      open++;
      timer ??= setInterval(onTick, 1);
    },
    frames: () => written,
    open: () => open,
    stop,
  };
}

export function startSseServer(): Promise<{ port: number; close(): void; streamFrames(): number; streamsOpen(): number }> {
  const app = uws.App();
  const ticker = streamTicker();
  app.get('/stream', (res) => ticker.add(res));
  app.get('/separate', (res) => turns(res, [() => (head(res), res.write(META)), () => res.write(DELTA), () => res.write(DONE), () => res.end()]));
  return new Promise((resolve, reject) => {
    app.listen('127.0.0.1', 0, (socket) => {
      if (!socket) return reject(new Error('uWS did not listen'));
      resolve({
        port: uws.us_socket_local_port(socket),
        close: () => (ticker.stop(), uws.us_listen_socket_close(socket)),
        streamFrames: ticker.frames,
        streamsOpen: ticker.open,
      });
    });
  });
}
