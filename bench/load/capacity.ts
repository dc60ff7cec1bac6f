// The capacity search (issue 25's headline figure): for each target, the largest K of concurrent
// streams at 20 deltas/s, started at 500/s, that it carries with
//   - added latency p99 ≤ 50 ms over the floor's at the same K (the floor itself: its own p99 ≤ 50 ms),
//   - time to first delta p99 ≤ 250 ms,
//   - nothing failed, lost or doubled.
// K doubles from BENCH_CAPACITY_MIN until a step misses (or BENCH_CAPACITY_MAX holds), then bisects
// geometrically between the last K that held and the first that did not, until they are within
// BENCH_CAPACITY_TOL of each other. Each step is a fresh measured run after a warm-up (the service: a
// fresh process); the floor is measured once per K tried (twice when it misses) and shared by every
// target's step at that K.
// A target's step near the bound is decided by a majority of up to BENCH_CAPACITY_REPEATS runs: at the
// service's edge its added p99 is flat (48–59 ms from 1,130 to 1,600 streams in one run), so a few
// milliseconds of the machine's noise moved a one-run search by a quarter. A run that holds with half
// of each bound to spare, or misses by twice a bound or by a failure, decides its step alone.
// Each stream lasts the ramp plus BENCH_CAPACITY_HOLD_S, so all K are open at once for that long.
// A target's step at a K where the floor itself misses counts as missed: above the floor's capacity
// the machine, not the target, is what is measured.
//
// Knobs (env): BENCH_CAPACITY=0 (off)  BENCH_CAPACITY_TARGETS=floor,service,nginx,peer
//   BENCH_CAPACITY_MIN=100 BENCH_CAPACITY_MAX=10000 BENCH_CAPACITY_TOL=0.1 BENCH_CAPACITY_RATE=20
//   BENCH_CAPACITY_STARTS=500 BENCH_CAPACITY_HOLD_S=5 BENCH_CAPACITY_ADDED_P99_MS=50 BENCH_CAPACITY_TTFD_P99_MS=250
//   BENCH_CAPACITY_REPEATS=3 (1: every step one run)  BENCH_CAPACITY_SEARCHES=3 (searches per target)
// Issue 38: one search's K moved by a quarter within the hour (nginx's most), so each target is searched
// BENCH_CAPACITY_SEARCHES times, the targets alternated, and its row carries the median and the spread.
// Issue 48: unpinned, the searches moved by a third between days. With two cores or more the search is
// pinned (pin.ts): the target on one core, the generator and the simulator on the other, so the floor
// is what the load side drives on its one core; a target whose search stops where the floor itself
// misses is at the floor's cap, and its row says so. BENCH_PIN=0: unpinned.
import { driveOnce, type DriveContext, type Step, type WithService, type Who } from './drive.ts';
import { allCpus, pinPlan, pinProcess, type Pinning } from './pin.ts';
import { childByName } from '../../test/helpers/procs.ts';
import { failedRow, steadyP99, type Base, type CapacityProbe, type Row } from './measure.ts';
import { middle } from './stats.ts';

const env = process.env;
export const CAPACITY = env.BENCH_CAPACITY !== '0';
const TARGETS = (env.BENCH_CAPACITY_TARGETS ?? 'floor,service,nginx,peer').split(',').filter(Boolean);
const MIN = Number(env.BENCH_CAPACITY_MIN ?? 100);
export const CAPACITY_MAX = Number(env.BENCH_CAPACITY_MAX ?? 10_000);
const MAX = CAPACITY_MAX;
const TOL = Number(env.BENCH_CAPACITY_TOL ?? 0.1);
const RATE = Number(env.BENCH_CAPACITY_RATE ?? 20);
const STARTS = Number(env.BENCH_CAPACITY_STARTS ?? 500);
const HOLD_S = Number(env.BENCH_CAPACITY_HOLD_S ?? 5);
const ADDED_P99_MS = Number(env.BENCH_CAPACITY_ADDED_P99_MS ?? 50);
const TTFD_P99_MS = Number(env.BENCH_CAPACITY_TTFD_P99_MS ?? 250);
const REPEATS = Number(env.BENCH_CAPACITY_REPEATS ?? 3);
const SEARCHES = Math.max(1, Number(env.BENCH_CAPACITY_SEARCHES ?? 3));
/** Issue 48: the service's median capacity against nginx's (0.7 in issue 38, before the pinned figures). */
const RATIO_TARGET = 0.6;
/** Issue 48: each target's searches within this % of its median. */
const SPREAD_PCT = 15;

export const capacityBound = () =>
  `K concurrent streams at ${RATE} deltas/s, started at ${STARTS}/s, all open together for ${HOLD_S} s; bound: added p99 ≤ ${ADDED_P99_MS} ms over the floor, `
  + `time to first delta p99 ≤ ${TTFD_P99_MS} ms, nothing failed, lost or doubled; K from ${MIN} (doubling) to ${MAX}, bisected to within ${Math.round(TOL * 100)} %`
  + (REPEATS > 1 ? `; a step near the bound decided by a majority of ${REPEATS} runs` : '')
  + `; ${SEARCHES} search${SEARCHES > 1 ? 'es' : ''} per target, alternated between targets, the median reported`;

export interface CapacityContext extends DriveContext {
  log(msg: string): void;
  /** True once the bench's time budget is spent: the search stops and says so. */
  overBudget(): boolean;
}

const stepAt = (k: number): Step => ({ k, rate: RATE, startsPerSec: STARTS, deltas: Math.ceil(RATE * (k / STARTS + HOLD_S)) });

/** Why the row misses the bound, or null when it holds. `floor` is null for the floor's own row. */
export function miss(row: Row, floor: Row | null): string | null {
  if (row.failed === null) return row.note ?? 'the run failed';
  if (row.failed || row.lost || row.duplicated) return `failed ${row.failed}, lost ${row.lost}, doubled ${row.duplicated}`;
  if (row.ttfdP99Ms === null || row.ttfdP99Ms > TTFD_P99_MS) return `ttfd p99 ${row.ttfdP99Ms} ms > ${TTFD_P99_MS}`;
  if (floor) {
    const floorMiss = miss(floor, null);
    if (floorMiss) return `the floor itself misses at this K (${floorMiss})`;
    if (row.addedP99Ms === null || row.addedP99Ms > ADDED_P99_MS) return `added p99 ${row.addedP99Ms} ms > ${ADDED_P99_MS}`;
  } else if (row.latencyP99Ms == null || row.latencyP99Ms > ADDED_P99_MS) {
    return `latency p99 ${row.latencyP99Ms} ms > ${ADDED_P99_MS}`;
  }
  return null;
}

/**
 * True when this run alone decides its step: it failed, or the floor missed, or its worst figure is
 * under half its bound or over twice it. A run between those is near the bound, where noise decides.
 */
export function decisive(row: Row, floor: Row): boolean {
  if (row.failed === null || row.failed || row.lost || row.duplicated || miss(floor, null)) return true;
  if (row.addedP99Ms == null || row.ttfdP99Ms == null) return true;
  const worst = Math.max(row.addedP99Ms / ADDED_P99_MS, row.ttfdP99Ms / TTFD_P99_MS);
  return worst <= 0.5 || worst > 2;
}

/** The step's verdict from its runs' passes so far (true: held), or null while no majority of `repeats` agrees. */
export function verdict(passes: readonly boolean[], repeats = REPEATS): boolean | null {
  const need = Math.floor(repeats / 2) + 1;
  const held = passes.filter(Boolean).length;
  if (held >= need) return true;
  if (passes.length - held >= need) return false;
  return null;
}

/** The K to try after `lo` held and `hi` did not (null: close enough). Rounded to tens. */
export function nextK(lo: number, hi: number | null): number | null {
  if (hi === null) return lo >= MAX ? null : Math.min(MAX, lo * 2);
  if (hi / lo <= 1 + TOL) return null;
  const mid = Math.round(Math.sqrt(lo * hi) / 10) * 10;
  return mid > lo && mid < hi ? mid : null;
}

const whoOf = (target: string): Who | null =>
  target === 'service' ? { target: 'service', persist: true }
  : target === 'service-h2c' ? { target: 'service', persist: true, h2c: true }
  : target === 'floor' || target === 'nginx' || target === 'peer' ? { target } : null;

const baseOf = (who: Who): Base => {
  const h2c = 'h2c' in who && who.h2c === true;
  return { target: who.target, provider: 'provider_c', persist: who.target === 'service' ? true : null, k: 0, rate: RATE, scenario: 'capacity', ...(h2c ? { variant: 'h2c' } : {}) };
};

/** A step's outcome: its verdict, the run that stands for it, and every run with its own pass. */
interface StepOutcome {
  row: Row;
  held: boolean;
  runs: Row[];
  passes: boolean[];
}

/** A run's figures as a capacity probe records them. */
const figures = (r: Row) => ({ addedP99Ms: r.addedP99Ms, addedSteadyP99Ms: r.addedSteadyP99Ms ?? null, ttfdP99Ms: r.ttfdP99Ms, loadAvg1: r.loadAvg1 });

/**
 * A target's step at one K: one run, or more while they are near the bound and no majority agrees.
 * The first run that agrees with the verdict is the step's row. Above the floor's own capacity: not run.
 */
async function targetStep(c: CapacityContext, who: Who, base: Base, floor: Row, logRun: (row: Row, i: number) => void): Promise<StepOutcome> {
  const floorMiss = miss(floor, null);
  if (floorMiss) {
    const row = failedRow(base, `not run: the floor itself misses at this K (${floorMiss})`);
    return { row, held: false, runs: [row], passes: [false] };
  }
  const runs: Row[] = [];
  const passes: boolean[] = [];
  for (;;) {
    const row = await driveOnce(c, who, base, stepAt(base.k), floor).catch((err: Error) => failedRow(base, `run failed: ${err.message.split('\n')[0]}`));
    logRun(row, runs.length);
    runs.push(row);
    passes.push(miss(row, floor) === null);
    const held = runs.length === 1 && decisive(row, floor) ? passes[0]! : verdict(passes);
    if (held !== null) return { row: runs[passes.indexOf(held)]!, held, runs, passes };
  }
}

/** One search of one target: the largest K that held, the run standing for it, every step tried. */
interface Search {
  k: number;
  best: Row | null;
  probes: CapacityProbe[];
  note: string | null;
  /** The search stopped where the floor itself missed: the load side's cap, not the target's. */
  atFloorCap: boolean;
}

/** A missed step that missed because the floor did (capacity's `miss` and `targetStep` say so in these words). */
const FLOOR_MISSED = /the floor itself misses/;

async function searchTarget(c: CapacityContext, target: string, who: Who, base: Base, floorAt: (k: number) => Promise<Row>, search: number): Promise<Search> {
  const h2c = base.variant === 'h2c';
  const probes: CapacityProbe[] = [];
  let best: Row | null = null;
  let lo = 0;
  let hi: number | null = null;
  let stopped: string | null = null;
  for (let k: number | null = MIN; k !== null; k = lo === 0 ? null : nextK(lo, hi)) {
    if (c.overBudget()) {
      stopped = 'stopped early: the bench passed its time budget';
      break;
    }
    const floor = await floorAt(k);
    // The floor is judged by its own p99; a target by its added p99 over the floor's.
    const judge = who.target === 'floor' ? null : floor;
    const say = (r: Row, i: number) =>
      c.log(`capacity ${target} search ${search} K=${k}${i ? ` run ${i + 1}` : ''}: ${miss(r, judge) ?? 'held'} (added p99 ${r.addedP99Ms}, steady ${steadyP99(r)}, latency p99 ${r.latencyP99Ms}, ttfd p99 ${r.ttfdP99Ms}, load ${r.loadAvg1})`);
    let step: StepOutcome;
    if (judge) {
      step = await targetStep(c, who, { ...base, k, variant: h2c ? 'h2c-step' : 'step' }, judge, say);
    } else {
      say(floor, 0);
      const held = miss(floor, null) === null;
      step = { row: floor, held, runs: [floor], passes: [held] };
    }
    const { row } = step;
    const why = step.held ? null : miss(row, judge);
    probes.push({
      search, k, pass: step.held, why: why ?? 'held', failed: row.failed, ...figures(row),
      ...(step.runs.length > 1 ? { runs: step.runs.map((r, i) => ({ pass: step.passes[i]!, ...figures(r) })) } : {}),
    });
    if (why === null) {
      lo = k;
      best = row;
    } else {
      hi = k;
    }
  }
  const atFloorCap = who.target !== 'floor' && probes.some((p) => !p.pass && FLOOR_MISSED.test(p.why));
  const note = [stopped, lo === 0 && !stopped ? `missed already at K = ${MIN}` : null, hi === null && lo >= MAX ? `held at the largest K tried (${MAX})` : null]
    .filter(Boolean).join('; ') || null;
  return { k: lo, best, probes, note, atFloorCap };
}

/** The median of the searches' K (the mean of the middle two for an even count), a whole K. */
export const median = (values: readonly number[]): number => Math.round(middle(values)!);

/** The smallest and largest K the searches found. */
export const spread = (values: readonly number[]): [number, number] => [Math.min(...values), Math.max(...values)];

/** The farthest search from the median, in whole % of the median (0 for one search; 100 for a median of 0 with any other K). */
export function spreadPct(values: readonly number[]): number {
  const mid = median(values);
  const far = Math.max(...values.map((v) => Math.abs(v - mid)));
  return mid === 0 ? (far === 0 ? 0 : 100) : Math.round((far / mid) * 100);
}

/**
 * The order of the searches: round after round, each target once, in BENCH_CAPACITY_TARGETS order
 * (service, nginx, service, nginx, …), so a drift of the machine over the hour falls on every target alike
 * instead of on whichever was searched last. The floor is searched once: its steps are measured once per
 * K and shared, so another search of it would replay the same rows.
 */
export function searchOrder(targets: readonly string[], searches: number): { target: string; search: number }[] {
  const order: { target: string; search: number }[] = [];
  for (let search = 1; search <= searches; search++) {
    for (const target of targets) if (target !== 'floor' || search === 1) order.push({ target, search });
  }
  return order;
}

/** A target's searches as the results carry them: the median, every search's K, and their spread. */
export interface CapacityFigure {
  median: number;
  searches: number[];
  spread: [number, number];
  /** ± this % of the median holds every search. */
  spreadPct: number;
  /** Searches that stopped at the floor's cap. */
  atFloorCap: number;
}

/** The service's median ÷ nginx's, with both targets' searches; null when either was not searched. */
export function capacityRatio(rows: readonly Row[]): {
  ratio: number; pass: boolean; bound: string; service: CapacityFigure; nginx: CapacityFigure; spreadsWithin: boolean; pinned: string | null;
} | null {
  const found = (target: string) => rows.find((x) => x.scenario === 'capacity' && x.target === target && x.variant === undefined);
  const of = (target: string): CapacityFigure | null => {
    const r = found(target);
    return r?.capacitySearches?.length
      ? { median: r.capacityStreams ?? 0, searches: r.capacitySearches, spread: spread(r.capacitySearches), spreadPct: spreadPct(r.capacitySearches), atFloorCap: r.capacityAtFloorCap ?? 0 }
      : null;
  };
  const service = of('service');
  const nginx = of('nginx');
  if (!service || !nginx || nginx.median === 0) return null;
  const ratio = Math.round((service.median / nginx.median) * 100) / 100;
  const capped = nginx.atFloorCap ? ` (nginx at the floor's cap in ${nginx.atFloorCap} of ${nginx.searches.length} searches: counted at it)` : '';
  return {
    ratio, pass: ratio >= RATIO_TARGET, bound: `service median ≥ ${RATIO_TARGET} × nginx median${capped}; each target's searches within ± ${SPREAD_PCT} % of its median`,
    service, nginx, spreadsWithin: service.spreadPct <= SPREAD_PCT && nginx.spreadPct <= SPREAD_PCT, pinned: found('service')?.pinned ?? null,
  };
}

/**
 * The context with the pinning applied: the harness, the simulators and the generator on the load CPUs,
 * nginx and the peer on the target's, and every service moved to the target's once it answers. The
 * returned function gives every process this moved its whole machine back.
 */
function pinned(c: CapacityContext, plan: Pinning): { c: CapacityContext; unpin(): void } {
  const load = [process.pid, c.sim.child.pid, c.h2cSim?.child.pid, childByName('generator')?.pid].filter((p): p is number => p !== undefined);
  const targets = [c.nginx?.child.pid, c.peer?.child.pid].filter((p): p is number => p !== undefined);
  for (const pid of load) pinProcess(pid, plan.loadCpus);
  for (const pid of targets) pinProcess(pid, plan.targetCpus);
  const withService: WithService = (sim, dbUrl, maxRuns, fn, dataDir, env) =>
    c.withService(sim, dbUrl, maxRuns, (svc) => {
      pinProcess(svc.pid, plan.targetCpus);
      return fn(svc);
    }, dataDir, env);
  return {
    c: { ...c, withService },
    unpin() {
      // The generator may have started during the search (on the load CPUs, from the harness).
      for (const pid of new Set([...load, ...targets, childByName('generator')?.pid ?? process.pid])) pinProcess(pid, allCpus());
    },
  };
}

/**
 * Runs BENCH_CAPACITY_SEARCHES searches of every target in BENCH_CAPACITY_TARGETS, alternated; one
 * `capacity` row per target: the median K, every search's K and their spread, the steps of every search.
 */
export async function runCapacity(outer: CapacityContext): Promise<Row[]> {
  const plan = pinPlan();
  const pin = 'note' in plan ? pinned(outer, plan) : null;
  outer.log(`capacity: ${'note' in plan ? `pinned: ${plan.note}` : plan.none}`);
  try {
    const rows = await search(pin?.c ?? outer);
    return rows.map((r) => ({ ...r, pinned: 'note' in plan ? plan.note : plan.none }));
  } finally {
    pin?.unpin();
  }
}

/** What the meta of a run says of the capacity search's pinning. */
export const capacityPinning = (): string => {
  const plan = pinPlan();
  return 'note' in plan ? plan.note : plan.none;
};

async function search(c: CapacityContext): Promise<Row[]> {
  const floors = new Map<number, Row>();
  const floorAt = async (k: number): Promise<Row> => {
    let row = floors.get(k);
    if (!row) {
      const base: Base = { target: 'floor', provider: 'provider_c', persist: null, k, rate: RATE, scenario: 'capacity', variant: 'step' };
      const once = () => driveOnce(c, { target: 'floor' }, base, stepAt(k), undefined).catch((err: Error) => failedRow(base, `run failed: ${err.message.split('\n')[0]}`));
      row = await once();
      // Every target's step at this K is judged against this row, so one disturbed floor run would sink
      // them all: a miss is measured once more, and the second run stands.
      if (miss(row, null)) row = await once();
      floors.set(k, row);
    }
    return row;
  };
  const searches = new Map<string, Search[]>();
  // A target whose process this bench did not start (BENCH_TARGETS, BENCH_ONLY) is not searched: a
  // search of it would write a row of 0 streams over nothing measured.
  const absent = (target: string) => (target === 'peer' && c.peer === null) || (target === 'nginx' && c.nginx === null);
  for (const target of TARGETS.filter(absent)) c.log(`capacity ${target}: not searched (${target === 'peer' ? (c.peerDown ?? 'not started') : 'not started'})`);
  for (const { target, search } of searchOrder(TARGETS.filter((t) => !absent(t)), SEARCHES)) {
    const who = whoOf(target);
    if (!who) continue;
    const found = await searchTarget(c, target, who, baseOf(who), floorAt, search);
    c.log(`capacity ${target} search ${search}: ${found.k} streams${found.note ? ` (${found.note})` : ''}`);
    searches.set(target, [...(searches.get(target) ?? []), found]);
  }
  const rows: Row[] = [];
  for (const [target, done] of searches) {
    const base = baseOf(whoOf(target)!);
    const ks = done.map((s) => s.k);
    const mid = median(ks);
    // The row's figures are those of the search whose K is nearest the median.
    const standing = done.reduce((a, b) => (Math.abs(b.k - mid) < Math.abs(a.k - mid) ? b : a));
    const capped = done.filter((s) => s.atFloorCap).length;
    const note = [...new Set(done.map((s) => s.note).filter(Boolean)), capped ? `at the floor's cap in ${capped} of ${done.length} searches (the floor itself missed at the next K)` : null]
      .filter(Boolean).join('; ') || undefined;
    rows.push({
      ...(standing.best ?? failedRow(base, '')), ...base, k: mid, variant: base.variant, capacityStreams: mid,
      capacitySearches: ks, capacitySpread: spread(ks), capacitySpreadPct: spreadPct(ks), capacityAtFloorCap: capped, capacityProbes: done.flatMap((s) => s.probes), note,
    });
  }
  return rows;
}
