// What one load stream checks, per kind of target. Every stream records per-delta latency
// (arrival − the simulator's send stamp) and its time to first delta, and at its end is judged:
// ok, or failed with a reason; lost/duplicated deltas are counted against the scripted D.
import type { Socket } from 'node:net';
import { countStamps, eachStamp, epochNow, openStream, parseBlock, type Endpoint } from './client.ts';
import type { Samples } from './stats.ts';

export interface Tally {
  ok: number;
  failed: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  deltas: number;
  reasons: Record<string, number>;
  latency: Samples;
  /** The deltas that arrived while every stream was open: after the last start, before the first end. */
  latencySteady: Samples;
  /** Set by the generator when its last stream has started. */
  rampOver: boolean;
  /** Set when the first stream is judged: its end (and the service's work for it) has begun. */
  anyEnded: boolean;
  ttfd: Samples;
}

export interface StreamJob {
  ep: Endpoint;
  path: string;
  headers: Record<string, string>;
  body: string;
  deltas: number;
  /**
   * `sse`: the service's chat stream; `cc`: a raw Chat Completions stream (floor, nginx, peer, the
   * OpenAI-compatible API's); `responses`: the OpenAI-compatible API's Responses stream.
   */
  kind: 'sse' | 'cc' | 'responses';
  /** Re-attach test: drop the connection after this many deltas, re-attach after `reattachDelayMs`. */
  dropAfter?: number;
  reattachDelayMs?: number;
  timeoutMs: number;
}

function fail(t: Tally, reason: string): void {
  t.failed++;
  const key = reason.slice(0, 120);
  t.reasons[key] = (t.reasons[key] ?? 0) + 1;
}

/** Runs one stream to its end; resolves when it is judged. */
export function runStream(job: StreamJob, t: Tally): Promise<void> {
  return new Promise((resolve) => {
    const t0 = epochNow();
    let first = 0;
    let n = 0;
    let last = 0;
    let joined = '';
    let done: string | null = null;
    let errorEvent: string | null = null;
    let sawDone = false;
    let chatId: string | null = null;
    let status = 0;
    let answer = '';
    let settled = false;
    let sock: Socket | null = null;
    // Re-attach: phase 2 text is rebuilt from the replay (first delta = all text so far) plus live deltas.
    let phase = 1;
    let replayed = false;
    let prefix = '';

    const judge = (err: string | null): void => {
      if (settled) return;
      settled = true;
      t.anyEnded = true;
      clearTimeout(timer);
      if (status !== 200) fail(t, status ? `http ${status} ${answer.slice(0, 80)}` : `no response: ${err ?? 'closed'}`);
      else if (job.kind === 'cc' && !sawDone) fail(t, `ended without [DONE]: ${err ?? 'closed'}`);
      else if (job.kind !== 'cc' && errorEvent !== null) fail(t, `error event: ${errorEvent}`);
      else if (job.kind !== 'cc' && done === null) fail(t, `ended without done: ${err ?? 'closed'}`);
      else if (job.kind !== 'cc' && joined !== done) fail(t, phase === 2 ? 'reattach: reassembled text differs from done.text' : 'deltas differ from done.text');
      else if (phase === 2 && !done!.startsWith(prefix)) fail(t, 'reattach: text before the drop is not a prefix of done.text');
      else t.ok++;
      const got = job.kind !== 'cc' && done !== null ? countStamps(joined) : n;
      if (got < job.deltas) t.lost += job.deltas - got;
      if (got > job.deltas) t.duplicated += got - job.deltas;
      t.deltas += n;
      resolve();
    };
    const timer = setTimeout(() => {
      sock?.destroy();
      judge(`timed out after ${job.timeoutMs} ms`);
    }, job.timeoutMs);

    const onStamp = (at: number, skipLatency: boolean) => (stamp: number) => {
      n++;
      if (!first) {
        first = at;
        t.ttfd.push(at - t0);
      }
      if (stamp < last) t.outOfOrder++;
      last = stamp;
      if (skipLatency) return;
      t.latency.push(at - stamp);
      if (t.rampOver && !t.anyEnded) t.latencySteady.push(at - stamp);
    };

    const onEvent = (block: string, at: number): void => {
      if (job.kind === 'cc') {
        if (block.includes('[DONE]')) sawDone = true;
        else eachStamp(block, onStamp(at, false));
        return;
      }
      if (job.kind === 'responses') return onResponsesEvent(block, at);
      if (block.startsWith('event: delta')) {
        const text = JSON.parse(parseBlock(block).data).text as string;
        if (phase === 2 && !replayed) {
          // The first delta after attaching replays all text so far: it replaces what we had.
          replayed = true;
          joined = text;
          return;
        }
        joined += text;
        eachStamp(text, onStamp(at, false));
        if (phase === 1 && job.dropAfter !== undefined && n >= job.dropAfter) reattach();
        return;
      }
      const { event, data } = parseBlock(block);
      if (event === 'meta') chatId = JSON.parse(data).chatId;
      else if (event === 'done') done = JSON.parse(data).text;
      else if (event === 'error') errorEvent = JSON.parse(data).message;
    };

    // The Responses events: stamps only in the text deltas (the final events repeat the whole text);
    // the joined deltas must equal the completed response's output_text.
    const onResponsesEvent = (block: string, at: number): void => {
      const { event, data } = parseBlock(block);
      if (event === 'response.output_text.delta') {
        const text = (JSON.parse(data) as { delta: string }).delta;
        joined += text;
        eachStamp(text, onStamp(at, false));
      } else if (event === 'response.completed') done = (JSON.parse(data) as { response: { output_text: string } }).response.output_text;
      else if (event === 'response.failed' || event === 'response.incomplete' || event === 'error') errorEvent = `${event} ${data.slice(0, 200)}`;
    };

    // Each connection gets its own generation: events still queued from a dropped socket (the
    // rest of the chunk being parsed when we dropped it) must not count as the re-attach's replay.
    let gen = 0;
    const connect = (path: string, body: string): void => {
      const mine = ++gen;
      status = 0;
      sock = openStream(job.ep, 'POST', path, job.headers, body, {
        onHead: (s) => void (mine === gen && (status = s)),
        onEvent: (b, at) => void (mine === gen && onEvent(b, at)),
        onBody: (_s, b) => void (mine === gen && (answer = b)),
        onClose: (err) => void (mine === gen && judge(err)),
      });
    };

    const reattach = (): void => {
      if (!chatId) return;
      phase = 2;
      prefix = joined;
      gen++;
      sock!.destroy();
      setTimeout(() => {
        if (!settled) connect(`/v1/chats/${chatId}/stream/attach`, '');
      }, job.reattachDelayMs ?? 200);
    };

    connect(job.path, job.body);
  });
}
