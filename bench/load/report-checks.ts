// Tables for issue 48's checks in results.md: the burst row, the long-answer row and the start baseline
// (their figures are in results.json's `checks`, where a trimmed run carries them over: merge.ts).
import type { BurstResult } from './burst-gen.ts';
import type { Summary } from './stats.ts';

const fmt = (v: number | null | undefined, d = 1): string => (v === null || v === undefined ? '—' : v.toFixed(d));
const counts = (o: Record<string, number>): string => Object.entries(o).map(([k, v]) => `${v} × ${k}`).join('; ').replaceAll('|', '/') || '—';
type Check = Record<string, unknown> & { from?: { date: unknown; commit: unknown } };
const origin = (c: Check): string => (c.from ? ` (carried from ${String(c.from.date).slice(0, 16)}, commit ${c.from.commit})` : '');
const measured = (c: unknown): c is Check => typeof c === 'object' && c !== null && !('skipped' in c) && !('error' in c);

export function issue48Tables(checks: Record<string, unknown>): string[] {
  return [...burstTable(checks.burst), ...longAnswerTable(checks.longAnswer), ...startBaselineTable(checks.startBaseline)];
}

function burstTable(c: unknown): string[] {
  if (!measured(c)) return [];
  const out = ['', `## Bursts: N starts at once on an idle instance, the defaults${origin(c)}`, ''];
  out.push('| N | accepted | refused | ended done | meta p50 | meta p99 | first delta p50 | first delta p99 | last admitted (ms) | refusals answered p99 | not done |');
  out.push('|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|');
  for (const [key, v] of Object.entries(c)) {
    if (!/^n\d+$/.test(key)) continue;
    const r = v as BurstResult;
    out.push(`| ${r.n} | ${r.accepted} | ${counts(r.refused)} | ${r.done} | ${fmt(r.metaMs.p50)} | ${fmt(r.metaMs.p99)} | ${fmt(r.firstDeltaMs.p50)} | ${fmt(r.firstDeltaMs.p99)} | ${fmt(r.lastAdmittedMs)} | ${fmt(r.refusalMs.p99)} | ${counts(r.notDone)} |`);
  }
  out.push('', `Goal: every start accepted and ended \`done\`: **${c.pass ? 'met' : 'missed'}**.`);
  return out;
}

interface LongPhase {
  addedMs: { p50: number | null; p99: number | null };
  long: { done: number; n: number };
  slow: { done: number; n: number };
  probes: { done: number; n: number };
  measured: { lost: number };
  allStarts: { metaMs: Summary; metaOver5s: number; noMeta: number; refused?: number };
}

function longAnswerTable(c: unknown): string[] {
  if (!measured(c)) return [];
  const job = c.job as Record<string, number>;
  const out = ['', `## Long answers: ${job.runs} × ${(job.chars / 1e6).toFixed(1)} MB beside ${job.slow} slow readers and ${job.measured} measured streams${origin(c)}`, ''];
  out.push('| CHECKPOINT_MS | measured added p50 | added p99 | meta of every start p50 | p99 | max | over 5 s | refused | long done | slow done | probes done | measured lost |');
  out.push('|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|');
  for (const [name, key] of [['default', 'checkpointsOn'], ['0 (off)', 'checkpointsOff']] as const) {
    const p = c[key] as LongPhase | undefined;
    if (!p) continue;
    out.push(`| ${name} | ${fmt(p.addedMs.p50)} | ${fmt(p.addedMs.p99)} | ${fmt(p.allStarts.metaMs.p50)} | ${fmt(p.allStarts.metaMs.p99)} | ${fmt(p.allStarts.metaMs.max)} | ${p.allStarts.metaOver5s} | ${p.allStarts.refused ?? '—'} | `
      + `${p.long.done}/${p.long.n} | ${p.slow.done}/${p.slow.n} | ${p.probes.done}/${p.probes.n} | ${p.measured.lost} |`);
  }
  const ratio = c.onOverOff as Record<string, number | null>;
  const goals = c.goals as Record<string, boolean>;
  out.push('', `On ÷ off: added p50 ${fmt(ratio.addedP50, 2)}, added p99 ${fmt(ratio.addedP99, 2)}, slowest meta ${fmt(ratio.metaMax, 2)}. `
    + `Goals: added p99 within 2 × ${goals.addedP99Within2x ? 'met' : 'missed'}; every meta within its usual time ${goals.everyMetaWithinUsual ? 'met' : 'missed'}; long answers whole ${goals.longAnswersWhole ? 'yes' : 'no'}.`);
  return out;
}

interface RatePart {
  service: { cpuUsPerStart: number | null; pgCpuUsPerStart: number | null; total: number | null };
  baseline: { relay: number | null; sqlClient: number | null; pgCpuUsPerStart: number | null; total: number | null };
  serviceOverBaseline: number | null;
  serviceOverBaselineWithoutPostgres: number | null;
  sharesPct: { service: Record<string, number | null>; baseline: Record<string, number | null> };
}

function startBaselineTable(c: unknown): string[] {
  if (!measured(c)) return [];
  const out = ['', `## CPU per persisted start against nginx + SQL (µs per start)${origin(c)}`, ''];
  out.push('| starts/s | service | its Postgres | total | nginx relay | SQL client | its Postgres | total | service ÷ baseline | without Postgres | service shares % (main/actor/rest/Postgres) | baseline shares % (relay/SQL/Postgres) |');
  out.push('|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|');
  for (const [key, v] of Object.entries(c)) {
    if (!/^rate\d+$/.test(key)) continue;
    const r = v as RatePart;
    const s = r.sharesPct.service;
    const b = r.sharesPct.baseline;
    out.push(`| ${key.slice(4)} | ${fmt(r.service.cpuUsPerStart, 0)} | ${fmt(r.service.pgCpuUsPerStart, 0)} | ${fmt(r.service.total, 0)} | ${fmt(r.baseline.relay, 0)} | ${fmt(r.baseline.sqlClient, 0)} | `
      + `${fmt(r.baseline.pgCpuUsPerStart, 0)} | ${fmt(r.baseline.total, 0)} | ${fmt(r.serviceOverBaseline, 2)} | ${fmt(r.serviceOverBaselineWithoutPostgres, 2)} | `
      + `${s.main ?? '—'}/${s.actor ?? '—'}/${s.rest ?? '—'}/${s.postgres ?? '—'} | ${b.relay ?? '—'}/${b.sqlClient ?? '—'}/${b.postgres ?? '—'} |`);
  }
  out.push('', `Goal: ${c.goal}: **${c.pass === null ? 'not measured at that rate' : c.pass ? 'met' : 'missed'}**.`);
  return out;
}
