// The committed bench/results.json is what the docs quote, so a trimmed run must not drop the rows
// and checks an earlier run measured: they are carried over, each marked with the run it came from.
import type { Row } from './measure.ts';

export interface Results {
  meta: Record<string, unknown>;
  runs: Row[];
  checks: Record<string, unknown>;
}

/** Where a carried row or check was measured. */
export type Provenance = NonNullable<Row['from']>;

/** A run that carried rows or checks came from, with the knobs it was made with (`meta.origins`). */
export interface Origin {
  date: unknown;
  commit: unknown;
  knobs?: unknown;
}

const originKey = (o: { date: unknown; commit: unknown }): string => `${o.date} ${o.commit}`;

/** One row per scenario, target, variant, provider, persist, K and rate (capacity rows have no fixed K). */
export function rowKey(r: Row): string {
  const scenario = r.scenario ?? 'stream';
  return [scenario, r.target, r.variant ?? '', r.provider ?? '', r.persist ?? '', scenario === 'capacity' ? '' : r.k ?? '', r.rate ?? ''].join('/');
}

const skipped = (check: unknown): boolean =>
  check === undefined || typeof check === 'string' || (typeof check === 'object' && check !== null && 'skipped' in check);

/** `current` as written, plus every row and check of `previous` that `current` did not measure. */
export function mergeResults(previous: Results | null, current: Results): Results {
  if (!previous) return current;
  const origin: Provenance = { date: previous.meta.date, commit: previous.meta.commit };
  const measured = new Set(current.runs.map(rowKey));
  const carried = previous.runs
    .filter((r) => !measured.has(rowKey(r)))
    .map((r) => ({ ...r, from: r.from ?? origin }));
  const checks = { ...current.checks };
  for (const [name, check] of Object.entries(previous.checks ?? {})) {
    if (skipped(checks[name]) && !skipped(check)) {
      const from = (check as { from?: Provenance }).from ?? origin;
      // A check measured as a list (one entry per database) is kept whole beside its origin.
      checks[name] = Array.isArray(check) ? { runs: check, from } : { ...(check as object), from };
    }
  }
  return { meta: withOrigins(previous.meta, current.meta, carried, checks), runs: [...current.runs, ...carried], checks };
}

/**
 * `current` plus `origins`: every earlier run a carried row or check came from, with its knobs (the
 * previous file's own run, and the origins it already listed), so each committed figure can be
 * repeated. An origin nothing refers to any more is dropped.
 */
function withOrigins(previous: Results['meta'], current: Results['meta'], carried: Row[], checks: Results['checks']): Results['meta'] {
  const known = [...((previous.origins as Origin[] | undefined) ?? []), { date: previous.date, commit: previous.commit, knobs: previous.knobs }];
  const used = new Set(carried.map((r) => originKey(r.from!)));
  for (const check of Object.values(checks)) {
    const from = (check as { from?: Provenance } | null)?.from;
    if (from) used.add(originKey(from));
  }
  const origins = new Map<string, Origin>();
  for (const o of known) if (used.has(originKey(o)) && !origins.has(originKey(o))) origins.set(originKey(o), o);
  return origins.size ? { ...current, origins: [...origins.values()] } : current;
}

/** The knobs a run was made with, recorded in its meta so that it can be repeated. */
export function knobs(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && /^(BENCH_|LEDGER_|ACTOR_THREADS$)/.test(k)) out[k] = v;
  return out;
}
