// The ledger of one relayed delta, stage by stage, each measured alone (bench/ledger/ledger.ts runs it).
import { createParser } from 'eventsource-parser';
import { request } from 'undici';
import { deltaFrame } from '../../actors/runtime/frame.ts';
import { openaiFrames, SseFrames } from '../../src/providers/sse.ts';
import { actorDelta } from './actor.ts';
import { childCpu, startSseClient, startUpstream } from './start.ts';
import { DELTAS, startSseServer } from './sse-server.ts';
import { CHUNK } from './upstream.ts';
import { deltaCrossing } from './crossing.ts';
import { supervisorFanOut } from './supervisor.ts';
import { time, type Stage } from './timing.ts';

const N = Number(process.env.LEDGER_OPS ?? 2000) * 10;
const CHUNK_BYTES = new TextEncoder().encode(CHUNK);
const DATA = CHUNK.slice('data: '.length, -2);

/** Upstream chunks through undici's `request` and the body's async iterator: socket read, HTTP parse, Readable. */
async function upstreamRead(): Promise<Stage> {
  const up = await startUpstream();
  try {
    let reads = 0;
    const perStream = 300;
    const s = await time('socket read + HTTP/1.1 parse + body Readable (undici), per read', async () => {
      const r = await request(`http://127.0.0.1:${up.port}/chunks?n=${perStream}`);
      for await (const _ of r.body) reads++;
    }, { ops: 4, warm: 1, rounds: 3 }, childCpu(up.child));
    const per = reads / (4 * 3 + 1);
    return { ...s, cpuUs: s.cpuUs / per, wallUs: s.wallUs / per, otherUs: (s.otherUs ?? 0) / per, note: `${per.toFixed(0)} reads for ${perStream} chunks sent 1 ms apart; other = the upstream server` };
  } finally {
    await up.child.stop();
  }
}

async function clientWrite(): Promise<Stage> {
  const server = await startSseServer();
  const client = await startSseClient(server.port);
  try {
    const s = await time('client write: a delta frame in its own cork (uWS)', () => client.run('/deltas', 20, 20), { ops: 5, warm: 1, rounds: 3 }, childCpu(client.child));
    const per = 20 * DELTAS;
    return { ...s, cpuUs: s.cpuUs / per, wallUs: s.wallUs / per, otherUs: (s.otherUs ?? 0) / per, note: `${DELTAS} frames per response, 20 responses at once; other = the client process reading` };
  } finally {
    await client.child.stop();
    server.close();
  }
}

export async function deltaLedger(): Promise<Stage[]> {
  const upstream = await upstreamRead();
  const decoder = new TextDecoder();
  let events = 0;
  const parser = createParser({ onEvent: () => void events++ });
  const sse = await time('SSE parse: TextDecoder + eventsource-parser', () => parser.feed(decoder.decode(CHUNK_BYTES, { stream: true })), { ops: N });
  const json = await time('JSON.parse of the chunk', () => JSON.parse(DATA), { ops: N });
  const frames = new SseFrames(new Headers(), openaiFrames);
  const both = await time('SseFrames.feed (the two above and the openai filter)', () => frames.feed(CHUNK_BYTES), { ops: N });
  const frame = await time('frame: deltaFrame(text)', (i) => deltaFrame(`1764069999${i}.456|`), { ops: N });
  return [
    upstream,
    sse,
    json,
    { ...both, inSum: false, note: 'what the adapter runs: SSE parse + JSON.parse + filter' },
    await actorDelta(N),
    await deltaCrossing(),
    await supervisorFanOut(N),
    { ...frame, inSum: false, note: 'inside the actor\'s row (emitDelta builds it)' },
    await clientWrite(),
  ];
}
