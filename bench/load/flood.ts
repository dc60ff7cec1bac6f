// Issue 38's flood row of `make bench`: streams already running while a flood of starts comes in.
// 200 stamped provider_c streams at 20 deltas/s run; after BEFORE_S seconds, 800 chat-stream starts
// a second are offered for 8 s (by overload-gen.ts, in its own process); the running streams go on a
// few seconds past it. Reported: the running streams' latency over the simulator's stamps (p50/p99)
// before and during the flood, the refusals' answer time (p50/p99), and what became of everything
// (accepted, refused by message, dropped while waiting (adaptive LIFO: the stream's one event the overload
// refusal, no run started), lost deltas, streams cut), with shedding off and with the default
// admission (ADMISSION=adaptive), each on a fresh service. The goals (issue 38) are read here, never asserted in a test:
// running streams' p99 during the flood ≤ 100 ms, refusals at p99 ≤ 50 ms, nothing accepted lost or cut.
//
// Knobs (env): BENCH_FLOOD=0 skips it; BENCH_FLOOD_STREAMS=200 BENCH_FLOOD_RATE=20 BENCH_FLOOD_STARTS=800
//   BENCH_FLOOD_SECONDS=8 BENCH_FLOOD_BEFORE_S=5 BENCH_FLOOD_AFTER_S=3 BENCH_FLOOD_DELTAS=20 (each flood
//   stream's deltas) BENCH_FLOOD_OPEN_PER_SEC=50 (the running streams' opening pace)
//   BENCH_FLOOD_MAX_RUNS=<none> (a phase with the defaults and each MAX_ACTIVE_RUNS listed: a run cap, refused from the headers too)
//   BENCH_FLOOD_OFF=0 skips the shedding-off phase (a flood of thousands a second, e.g. BENCH_FLOOD_STARTS=2500, would
//   only be taken whole there: minutes of CPU that decide nothing about the refusals)
// Each phase samples the two gauges (css_event_loop_lag_p99_ms, css_event_loop_busy_percent) while its running
// streams open and while the flood is offered: what the signals read at ordinary load and at saturation.
// Alone: BENCH_ONLY=flood make bench.
import { serviceBody } from './bodies.ts';
import { countStamps, eachStamp, openStream, parseBlock } from './client.ts';
import { sampleSaturation, SHEDDING_DEFAULTS, SHEDDING_OFF, type OverloadContext } from './overload.ts';
import { offerStarts } from './overload-gen.ts';
import { Samples, summarize } from './stats.ts';

const env = process.env;
const num = (name: string, fallback: number) => Number(env[name] ?? fallback);

interface Running {
  /** Each delta's stamp and its latency to the client (stamp-to-read), as pairs. */
  seen: number[];
  ended: Promise<{ cut: number; lost: number; duplicated: number; refusedOpens: number }>;
  /** Every stream has had its first delta. */
  started: Promise<void>;
}

/** Opens `n` stamped streams of `deltas` each, `perSec` a second. */
function openRunning(port: number, n: number, perSec: number, deltas: number, rate: number): Running {
  const seen: number[] = [];
  const tally = { cut: 0, lost: 0, duplicated: 0, refusedOpens: 0 };
  const body = serviceBody('provider_c', true, deltas, rate);
  /** One stream to its end; a refused open (the instance sheds its own warm-up burst) is tried again after Retry-After, as a client would. */
  const one = (i: number, first: () => void): Promise<void> =>
    new Promise((resolve) => {
      let status = 0;
      let joined = '';
      let done: string | null = null;
      openStream({ host: '127.0.0.1', port }, 'POST', '/v1/chat-completions/stream', {}, body.replaceAll('__I__', `running-${i}`), {
        onHead: (s) => (status = s),
        onEvent(block, at) {
          const { event, data } = parseBlock(block);
          if (event === 'delta') {
            const text = JSON.parse(data).text as string;
            joined += text;
            first();
            eachStamp(text, (stamp) => void seen.push(stamp, at - stamp));
          } else if (event === 'done') done = JSON.parse(data).text as string;
        },
        onClose() {
          if (status === 503) {
            tally.refusedOpens++;
            setTimeout(() => void one(i, first).then(resolve), 1000);
            return;
          }
          first();
          if (done === null || done !== joined) tally.cut++;
          const got = countStamps(joined);
          if (got < deltas) tally.lost += deltas - got;
          if (got > deltas) tally.duplicated += got - deltas;
          resolve();
        },
      });
    });
  const firsts: Promise<void>[] = [];
  const ends: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    let first!: () => void;
    firsts.push(new Promise((r) => (first = r)));
    const f = first;
    ends.push(new Promise<void>((r) => setTimeout(r, (i * 1000) / perSec)).then(() => one(i, f)));
  }
  return { seen, started: Promise.all(firsts).then(() => undefined), ended: Promise.all(ends).then(() => tally) };
}


type FloodContext = Pick<OverloadContext, 'sim' | 'dbUrl' | 'log' | 'withService'>;

async function floodPhase(c: FloodContext, name: string, signals: Record<string, string>, maxActiveRuns?: number) {
  const streams = num('BENCH_FLOOD_STREAMS', 200);
  const rate = num('BENCH_FLOOD_RATE', 20);
  const starts = num('BENCH_FLOOD_STARTS', 800);
  const seconds = num('BENCH_FLOOD_SECONDS', 8);
  const beforeS = num('BENCH_FLOOD_BEFORE_S', 5);
  const afterS = num('BENCH_FLOOD_AFTER_S', 3);
  const floodDeltas = num('BENCH_FLOOD_DELTAS', 20);
  const openPerSec = num('BENCH_FLOOD_OPEN_PER_SEC', 50);
  // Long enough for the running streams to outlast the flood: their paced opening, a few retries and the
  // generator's own start (tsx compiles it: seconds on a loaded machine) included.
  const deltas = Math.ceil(rate * (streams / openPerSec + 20 + beforeS + seconds + afterS));
  const maxRuns = maxActiveRuns ?? streams + Math.ceil(starts * (seconds + floodDeltas / rate)) + 1000;
  return c.withService(c.sim, c.dbUrl, maxRuns, async (svc) => {
    const opening = sampleSaturation(svc.port);
    const running = openRunning(svc.port, streams, openPerSec, deltas, rate);
    await running.started;
    await new Promise((r) => setTimeout(r, 1000 + beforeS * 1000));
    const gaugesOpening = opening.stop();
    const flooded = sampleSaturation(svc.port);
    const flood = await offerStarts({ port: svc.port, body: serviceBody('provider_c', true, floodDeltas, rate), deltas: floodDeltas, startsPerSec: starts, seconds });
    const gaugesFlood = flooded.stop();
    const tally = await running.ended;
    // Before: the BEFORE_S seconds up to the first start offered; during: from it until the last
    // accepted flood stream could have ended.
    const before = new Samples();
    const during = new Samples();
    const duringUntil = flood.offeredUntil + (floodDeltas / rate) * 1000;
    for (let i = 0; i < running.seen.length; i += 2) {
      const stamp = running.seen[i]!;
      if (stamp >= flood.offeredFrom - beforeS * 1000 && stamp < flood.offeredFrom) before.push(running.seen[i + 1]!);
      else if (stamp >= flood.offeredFrom && stamp <= duringUntil) during.push(running.seen[i + 1]!);
    }
    const out = {
      signals,
      maxActiveRuns: maxRuns,
      gauges: { opening: gaugesOpening, flood: gaugesFlood },
      running: { streams, deltas, rate, before: summarize(before), during: summarize(during), ...tally },
      flood: { startsPerSec: starts, seconds, deltas: floodDeltas, ...flood },
    };
    c.log(`flood ${name}: running p99 before ${out.running.before.p99} ms, during ${out.running.during.p99} ms, cut ${tally.cut} lost ${tally.lost} (opens refused ${tally.refusedOpens}); `
      + `flood ${flood.accepted}/${flood.offered} accepted, refusal p50 ${flood.refusalMs.p50} p99 ${flood.refusalMs.p99} ms, dropped waiting ${flood.dropped ?? 0} (p99 ${flood.droppedMs?.p99} ms), lost ${flood.lost} failed ${flood.failed} ${JSON.stringify(flood.refused)}; `
      + `busy % opening p50 ${gaugesOpening.busy.p50} max ${gaugesOpening.busy.max}, flood p50 ${gaugesFlood.busy.p50} max ${gaugesFlood.busy.max}; `
      + `lag ms opening p50 ${gaugesOpening.lag.p50} max ${gaugesOpening.lag.max}, flood p50 ${gaugesFlood.lag.p50} max ${gaugesFlood.lag.max}`);
    return out;
  }, undefined, signals);
}

async function floodCheck(c: FloodContext): Promise<Record<string, unknown>> {
  const off = env.BENCH_FLOOD_OFF === '0' ? 'skipped (BENCH_FLOOD_OFF=0)' : await floodPhase(c, 'shedding off', SHEDDING_OFF);
  const on: Record<string, Awaited<ReturnType<typeof floodPhase>>> = {};
  const list = (v: string | undefined, fallback: number) => (v ?? String(fallback)).split(',').filter(Boolean);
  on.adaptive = await floodPhase(c, 'the defaults (ADMISSION=adaptive)', SHEDDING_DEFAULTS);
  // MAX_ACTIVE_RUNS set to what this machine carries: the operator's static bound beside the adaptive signals.
  for (const max of list(env.BENCH_FLOOD_MAX_RUNS, 0).map(Number).filter((n) => n > 0)) {
    on[`max-${max}`] = await floodPhase(c, `MAX_ACTIVE_RUNS=${max} with the defaults`, { ...SHEDDING_DEFAULTS }, max);
  }
  const shed = on.adaptive;
  return {
    sheddingOff: off,
    shedding: on,
    goals: shed && {
      runningP99DuringWithin100ms: (shed.running.during.p99 ?? Infinity) <= 100,
      refusalP99Within50ms: (shed.flood.refusalMs.p99 ?? 0) <= 50,
      nothingAcceptedLostOrCut: shed.running.cut === 0 && shed.running.lost === 0 && shed.flood.lost === 0 && shed.flood.failed === 0,
    },
  };
}

/** A row that fails says why in results.json rather than ending the bench. */
export const runFloodCheck = (c: FloodContext) =>
  floodCheck(c).catch((err: Error) => ({ error: err.message.split('\n').slice(0, 3).join(' ') }));
