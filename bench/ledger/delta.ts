// The ledger of one relayed delta, stage by stage, each measured alone (bench/ledger/ledger.ts runs it).
import { createProviderFetch } from '../../src/providers/http-fetch.ts';
import type { PushBody } from '../../src/providers/push-body.ts';
import { actorThreadDelta } from './actor.ts';
import { childCpu, startSseClient, startUpstream } from './start.ts';
import { startSseServer } from './sse-server.ts';
import { deltaCrossing } from './crossing.ts';
import { supervisorFanOut } from './supervisor.ts';
import { waitFor } from '../../test/helpers/wait.ts';
import { steadyWindow, type Stage } from './timing.ts';

const N = Number(process.env.LEDGER_OPS ?? 2000) * 10;

/** The delta load the row reproduces: the bench's K = 1,000 streams at 20 deltas a second. */
const STREAMS = 1000;
const RATE = 20;
const WINDOW_MS = 2000;

/**
 * Upstream chunks as the actor thread reads them under the bench's delta load: STREAMS responses at
 * RATE chunks a second, each through the service's provider fetch (http-fetch.ts: undici's dispatch
 * handler, a PushBody with one subscriber), so many reads share an event-loop turn as they do in the
 * service. The CPU is read over a window while every stream is open (no connect, no request), the
 * steady phase of the bench's `cpuUsPerDeltaSteady`. The note says how many reads shared a turn.
 */
async function upstreamRead(): Promise<Stage> {
  const up = await startUpstream();
  const pf = createProviderFetch({ timeoutMs: 120_000 });
  const url = `http://127.0.0.1:${up.port}/chunks?n=${RATE * 8}&rate=${RATE}`;
  let best: Stage | null = null;
  try {
    for (let round = 0; round < 2; round++) {
      let chunks = 0;
      let turns = 0;
      let inTurn = false;
      const endTurn = () => void (inTurn = false);
      let opened = 0;
      let allOpen: () => void = () => {};
      const open = new Promise<void>((resolve) => (allOpen = resolve));
      const streams = Array.from({ length: STREAMS }, async () => {
        const r = (await pf(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' })) as unknown as { body: PushBody };
        let first = true;
        await new Promise<void>((resolve, reject) => r.body.subscribe(() => {
          chunks++;
          if (!inTurn) {
            inTurn = true;
            turns++;
            setImmediate(endTurn);
          }
          if (first && (first = false, ++opened === STREAMS)) allOpen();
        }, resolve, reject));
      });
      await open;
      const t0 = turns;
      const { units, ...figures } = await steadyWindow(WINDOW_MS, () => chunks, childCpu(up.child));
      const perTurn = units / (turns - t0);
      await Promise.all(streams);
      const stage: Stage = {
        ...figures,
        name: `socket read + HTTP/1.1 parse + PushBody (undici dispatch), per chunk, ${STREAMS} streams at ${RATE}/s`,
        note: `${units} chunks over ${WINDOW_MS / 1000} s with every stream open, ${perTurn.toFixed(1)} reads per event-loop turn; other = the upstream server`,
      };
      if (!best || stage.cpuUs < best.cpuUs) best = stage;
    }
    return best!;
  } finally {
    await up.child.stop();
  }
}

/**
 * Client writes as the main thread makes them under the bench's delta load: STREAMS responses open at
 * once, each written a delta frame every 50 ms (20/s) in a cork of its own, a millisecond's share of
 * them per 1 ms tick (sse-server.ts /stream), as the supervisor writes each outbox batch. The CPU is read
 * over a window while every stream is open; other = the client process reading.
 */
async function clientWrite(): Promise<Stage> {
  const server = await startSseServer();
  const client = await startSseClient(server.port);
  try {
    let best: Stage | null = null;
    for (let round = 0; round < 2; round++) {
      const done = client.run('/stream', STREAMS, STREAMS);
      await waitFor(() => server.streamsOpen() === STREAMS, 30_000, `${STREAMS} /stream responses open`);
      const { units, ...figures } = await steadyWindow(WINDOW_MS, server.streamFrames, childCpu(client.child));
      const stage: Stage = {
        ...figures,
        name: `client write: a delta frame in its own cork (uWS), ${STREAMS} streams at ${RATE}/s`,
        note: `${units} frames over ${WINDOW_MS / 1000} s with every stream open, a 1 ms tick writing each millisecond's share; other = the client process reading`,
      };
      if (!best || stage.cpuUs < best.cpuUs) best = stage;
      await done;
    }
    return best!;
  } finally {
    await client.child.stop();
    server.close();
  }
}

/** The actor thread's part, whole (actor.ts actorThreadDelta), against the ledger's upstream process. */
async function actorThread(): Promise<Stage> {
  const up = await startUpstream();
  try {
    const rounds = [];
    for (let r = 0; r < 3; r++) rounds.push(await actorThreadDelta(up, childCpu(up.child), { streams: STREAMS, rate: RATE, windowMs: WINDOW_MS }));
    const { units, ...s } = rounds.sort((a, b) => a.cpuUs - b.cpuUs)[1]!;
    return {
      ...s,
      name: `actor thread, whole: socket read → undici → PushBody → SseFrames → provider_c adapter → actor → delta frame → outbox batch, ${STREAMS} streams at ${RATE}/s`,
      note: `the median of three rounds, ${units} deltas over ${WINDOW_MS / 1000} s with every stream open; the batches encoded, not posted (the crossing's row); its socket read measured alone is the next row (out of the sum); other = the upstream server`,
    };
  } finally {
    await up.child.stop();
  }
}

export async function deltaLedger(): Promise<Stage[]> {
  const whole = await actorThread();
  const upstream = await upstreamRead();
  return [
    whole,
    { ...upstream, inSum: false },
    await deltaCrossing(RATE * STREAMS / 1000),
    await supervisorFanOut(N),
    await clientWrite(),
  ];
}
