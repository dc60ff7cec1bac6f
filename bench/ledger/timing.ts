// Micro-benchmark timing for the ledger: CPU (this process's user + system time, every thread) and
// wall time per operation, after a warm-up, best of a few rounds (the machine is shared: the lowest
// round is the least disturbed one). Each stage is measured alone; the ledger adds them up.

export interface Stage {
  /** The stage's name in the ledger. */
  name: string;
  /** µs of CPU of this process per operation. */
  cpuUs: number;
  /** µs of wall time per operation. */
  wallUs: number;
  /** Other processes' CPU per operation (Postgres backends, a server child), when the stage has some. */
  otherUs?: number;
  note?: string;
  /** false: shown for comparison, left out of the sum. */
  inSum?: boolean;
}

export interface TimeOptions {
  ops: number;
  warm?: number;
  rounds?: number;
  /** Operations in flight at once, for async stages (default 1: one after the other). */
  concurrency?: number;
}

const cpuNow = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** Runs `op` ops times per round (warm first) and keeps the round with the least CPU. */
export async function time(name: string, op: (i: number) => unknown, o: TimeOptions, other?: () => Promise<() => Promise<number>>): Promise<Stage> {
  const conc = o.concurrency ?? 1;
  const runOps = async (n: number) => {
    let next = 0;
    const lane = async () => {
      while (next < n) {
        const r = op(next++);
        if (r instanceof Promise) await r;
      }
    };
    await Promise.all(Array.from({ length: conc }, lane));
  };
  await runOps(o.warm ?? Math.max(10, Math.round(o.ops / 10)));
  let best: Stage | null = null;
  for (let round = 0; round < (o.rounds ?? 3); round++) {
    const stopOther = other ? await other() : null;
    const c0 = cpuNow();
    const t0 = performance.now();
    await runOps(o.ops);
    const wallUs = ((performance.now() - t0) * 1000) / o.ops;
    const cpuUs = (cpuNow() - c0) / o.ops;
    const otherUs = stopOther ? (await stopOther()) / o.ops : undefined;
    if (!best || cpuUs < best.cpuUs) best = { name, cpuUs, wallUs, ...(otherUs !== undefined ? { otherUs } : {}) };
  }
  return best!;
}

/** The sum of the stages that count (`inSum` not false), per operation. */
export const sum = (stages: Stage[], k: 'cpuUs' | 'otherUs'): number => stages.filter((s) => s.inSum !== false).reduce((n, s) => n + (s[k] ?? 0), 0);

/** A µs figure as the tables print it. */
export const f = (v: number | undefined) => (v === undefined ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(1));

/** The stages as a Markdown table, with their sum. */
export function table(title: string, stages: Stage[]): string {
  const out = [`### ${title}`, '', '| stage | CPU µs/op (this process) | other process µs/op | wall µs/op | note |', '|---|--:|--:|--:|---|'];
  for (const s of stages) out.push(`| ${s.inSum === false ? `(${s.name})` : s.name} | ${f(s.cpuUs)} | ${f(s.otherUs)} | ${f(s.wallUs)} | ${s.note ?? ''} |`);
  out.push(`| **sum** | **${f(sum(stages, 'cpuUs'))}** | **${f(sum(stages, 'otherUs'))}** | | |`, '');
  return out.join('\n');
}
