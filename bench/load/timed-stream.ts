// One chat stream of the service, timed event by event for the burst and long-answer rows: when its
// headers came (admitted or refused), its `meta`, its first delta, its end, whether it ended `done`
// with the deltas' text, and (stamped answers) each delta's latency over the simulator's stamp. A
// slow reader reads its socket for `readMs` out of every `readMs + pauseMs`, as a client on a poor
// link does, so the service's send queue for it fills.
import { countStamps, eachStamp, epochNow, openStream, parseBlock } from './client.ts';

export interface StreamOutcome {
  /** 0: no response at all. */
  status: number;
  /** Milliseconds from the request to the status line, to `meta`, to the first delta, to the end. */
  headMs: number | null;
  metaMs: number | null;
  firstDeltaMs: number | null;
  endMs: number;
  /** Ended with `done` whose text is the deltas' text joined. */
  done: boolean;
  chars: number;
  stamps: number;
  /** Why an accepted stream did not end `done` (error event, cut), or a refusal's `status message`. */
  why: string | null;
}

export interface TimedStream {
  port: number;
  /** The request body (the service's stream endpoint). */
  body: string;
  /** Each stamped delta's latency (arrival − stamp, ms) and its stamp. */
  onStamp?(latencyMs: number, stamp: number): void;
  slow?: { readMs: number; pauseMs: number };
  /** The stream is cut and judged after this long. */
  timeoutMs: number;
}

const PATH = '/v1/chat-completions/stream';

/** Runs one stream to its end (or its timeout) and says what became of it. */
export function timedStream(o: TimedStream): Promise<StreamOutcome> {
  return new Promise((resolve) => {
    const t0 = epochNow();
    const since = (at: number) => Math.round((at - t0) * 100) / 100;
    const out: StreamOutcome = { status: 0, headMs: null, metaMs: null, firstDeltaMs: null, endMs: 0, done: false, chars: 0, stamps: 0, why: null };
    let joined = '';
    let doneText: string | null = null;
    let errorEvent: string | null = null;
    let toggle: NodeJS.Timeout | null = null;
    const onStamp = o.onStamp;
    const sock = openStream({ host: '127.0.0.1', port: o.port }, 'POST', PATH, {}, o.body, {
      onHead: (s) => {
        out.status = s;
        out.headMs = since(epochNow());
      },
      onEvent: (block, at) => {
        if (block.startsWith('event: delta')) {
          const text = JSON.parse(parseBlock(block).data).text as string;
          if (out.firstDeltaMs === null) out.firstDeltaMs = since(at);
          joined += text;
          if (onStamp) eachStamp(text, (stamp) => onStamp(at - stamp, stamp));
          return;
        }
        const { event, data } = parseBlock(block);
        if (event === 'meta' && out.metaMs === null) out.metaMs = since(at);
        else if (event === 'done') doneText = JSON.parse(data).text as string;
        else if (event === 'error') errorEvent = JSON.parse(data).message as string;
      },
      onBody: (s, body) => {
        let message = body.slice(0, 80);
        try {
          message = JSON.parse(body).message as string;
        } catch {
          // not JSON: its first characters
        }
        out.why = `${s} ${message}`;
      },
      onClose: (err) => {
        clearTimeout(timer);
        if (toggle) clearTimeout(toggle);
        out.endMs = since(epochNow());
        out.chars = joined.length;
        out.stamps = countStamps(joined);
        out.done = out.status === 200 && errorEvent === null && doneText !== null && doneText === joined;
        if (out.status === 0) out.why = `no response: ${err ?? 'closed'}`;
        else if (out.status === 200 && !out.done) out.why = errorEvent !== null ? `error event: ${errorEvent}` : doneText === null ? `ended without done: ${err ?? 'closed'}` : 'deltas differ from done.text';
        resolve(out);
      },
    });
    const timer = setTimeout(() => sock.destroy(new Error(`timed out after ${o.timeoutMs} ms`)), o.timeoutMs);
    if (o.slow) {
      const { readMs, pauseMs } = o.slow;
      let reading = true;
      const flip = (): void => {
        reading = !reading;
        if (reading) sock.resume();
        else sock.pause();
        toggle = setTimeout(flip, reading ? readMs : pauseMs);
      };
      toggle = setTimeout(flip, readMs);
    }
  });
}

/** Tallies of many outcomes: accepted, refused by `status message`, ended done, and why the others did not. */
export function tally(outcomes: readonly StreamOutcome[]): { accepted: number; refused: Record<string, number>; done: number; notDone: Record<string, number> } {
  const refused: Record<string, number> = {};
  const notDone: Record<string, number> = {};
  let accepted = 0;
  let done = 0;
  for (const o of outcomes) {
    if (o.status === 200) {
      accepted++;
      if (o.done) done++;
      else notDone[o.why!.slice(0, 120)] = (notDone[o.why!.slice(0, 120)] ?? 0) + 1;
    } else {
      const key = (o.why ?? `${o.status}`).slice(0, 120);
      refused[key] = (refused[key] ?? 0) + 1;
    }
  }
  return { accepted, refused, done, notDone };
}
