// The overload row's load generator (its own process, as gen.ts): offers chat-stream starts at a
// steady rate for a while, and tells apart what the service did with each. An accepted stream is
// judged as gen.ts judges one (per-delta latency against the simulator's stamps, lost and doubled
// deltas against done.text); a refused one is timed from its request to its answer (the 503).
//
//   node --import tsx bench/load/overload-gen.ts '<OverloadJob json>'   → one JSON line (OverloadResult)
// (offerStarts runs it so for overload.ts and flood.ts.)
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { countStamps, eachStamp, epochNow, openStream, parseBlock } from './client.ts';
import { Samples, summarize } from './stats.ts';

export interface OverloadJob {
  port: number;
  /** Request body; `__I__` is replaced by the stream's index. */
  body: string;
  deltas: number;
  startsPerSec: number;
  seconds: number;
}

export interface OverloadResult {
  offered: number;
  accepted: number;
  /** Refusals by status and message, e.g. `503 server is overloaded, retry later`. */
  refused: Record<string, number>;
  /** Accepted streams that did not end with `done` and their whole text (dropped ones apart). */
  failed: number;
  /**
   * Accepted starts dropped while they waited (adaptive LIFO under a flood that lasts): the stream's one
   * event the overload refusal, no run started; and their time from the request to that event.
   */
  dropped: number;
  droppedMs: ReturnType<typeof summarize>;
  lost: number;
  duplicated: number;
  latencyMs: ReturnType<typeof summarize>;
  refusalMs: ReturnType<typeof summarize>;
  reasons: Record<string, number>;
  /** Epoch ms of the first start offered, and of the moment the last was. */
  offeredFrom: number;
  offeredUntil: number;
}

const OVERLOADED = 'server is overloaded, retry later';

function one(job: OverloadJob, i: number, r: OverloadResult, latency: Samples, refusal: Samples, dropped: Samples): Promise<void> {
  return new Promise((resolve) => {
    const t0 = epochNow();
    let status = 0;
    let joined = '';
    let done: string | null = null;
    let error: string | null = null;
    let events = 0;
    let errorAt = 0;
    const fail = (why: string) => {
      r.failed++;
      r.reasons[why] = (r.reasons[why] ?? 0) + 1;
    };
    openStream({ host: '127.0.0.1', port: job.port }, 'POST', '/v1/chat-completions/stream', {}, job.body.replaceAll('__I__', String(i)), {
      onHead: (s) => {
        status = s;
        if (s !== 200) refusal.push(epochNow() - t0);
      },
      onEvent: (block, at) => {
        const { event, data } = parseBlock(block);
        if (data !== '') events++;
        if (event === 'error') errorAt = epochNow() - t0;
        if (event === 'delta') {
          const text = JSON.parse(data).text as string;
          joined += text;
          eachStamp(text, (stamp) => latency.push(at - stamp));
        } else if (event === 'done') done = JSON.parse(data).text;
        else if (event === 'error') error = JSON.parse(data).message;
      },
      onBody: (s, body) => {
        let message = body.slice(0, 80);
        try {
          message = JSON.parse(body).message;
        } catch {
          // not JSON: keep the text
        }
        const key = `${s} ${message}`;
        r.refused[key] = (r.refused[key] ?? 0) + 1;
      },
      onClose: (err) => {
        if (status === 200 && events === 1 && error === OVERLOADED) {
          r.dropped++;
          dropped.push(errorAt);
        } else if (status === 200) {
          r.accepted++;
          if (error !== null) fail(`error event: ${error}`);
          else if (done === null) fail(`ended without done: ${err ?? 'closed'}`);
          else if (joined !== done) fail('deltas differ from done.text');
          const got = countStamps(joined);
          if (got < job.deltas) r.lost += job.deltas - got;
          if (got > job.deltas) r.duplicated += got - job.deltas;
        } else if (status === 0) {
          const key = `no response: ${err ?? 'closed'}`;
          r.refused[key] = (r.refused[key] ?? 0) + 1;
        }
        resolve();
      },
    });
  });
}

export async function runOverloadJob(job: OverloadJob): Promise<OverloadResult> {
  const r: OverloadResult = {
    offered: 0, accepted: 0, refused: {}, failed: 0, dropped: 0, droppedMs: summarize(new Samples()), lost: 0, duplicated: 0,
    latencyMs: summarize(new Samples()), refusalMs: summarize(new Samples()), reasons: {}, offeredFrom: epochNow(), offeredUntil: 0,
  };
  const latency = new Samples();
  const refusal = new Samples();
  const dropped = new Samples();
  const all: Promise<void>[] = [];
  const total = Math.round(job.startsPerSec * job.seconds);
  const gap = 1000 / job.startsPerSec;
  const t0 = performance.now();
  for (let i = 0; i < total; ) {
    const due = Math.min(total, Math.floor((performance.now() - t0) / gap) + 1);
    for (; i < due; i++) all.push(one(job, i, r, latency, refusal, dropped));
    if (i < total) await new Promise((res) => setTimeout(res, Math.max(1, gap)));
  }
  r.offered = total;
  r.offeredUntil = epochNow();
  await Promise.all(all);
  r.latencyMs = summarize(latency);
  r.refusalMs = summarize(refusal);
  r.droppedMs = summarize(dropped);
  return r;
}

/** Runs `job` in a process of its own, so that the offering side's CPU is not the measuring side's. */
export async function offerStarts(job: OverloadJob): Promise<OverloadResult> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', import.meta.filename, JSON.stringify(job)], { maxBuffer: 1 << 24 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as OverloadResult;
}

if (process.argv[1] === import.meta.filename && process.argv[2]) {
  process.stdout.write(JSON.stringify(await runOverloadJob(JSON.parse(process.argv[2]) as OverloadJob)) + '\n');
  process.exit(0);
}
