// Issue 48's start baseline: a start-rate target "nginx + SQL" that does the same work as a persisted
// start of the service and nothing more. nginx relays the one-delta stream (its relay, as the `nginx`
// row) while a minimal `pg` client (sql-starts.ts) writes each start's own statements at the same rate,
// over the same measured window: the chat with its input and running call, then the answer. Its row
// (`target: nginx`, `variant: sql`, persist true): CPU per start = nginx's + the SQL client's (both
// split out), Postgres's per start from the bench database's backends, as the service's rows.
// Then, per rate, the service's persisted start against it: the ratio with and without Postgres, and
// each part's share (the service's main thread, actor thread and the rest, its Postgres; the
// baseline's relay, SQL client and Postgres). The goal (issue 48): at 250 starts/s the service's CPU
// per persisted start (its Postgres included) ≤ 2 × the baseline's.
import { ccJob, simCcPath, type DriveContext, type Step } from './drive.ts';
import { failedRow, measure, r2, toRow, type Base, type Row } from './measure.ts';
import { startSqlClient } from './sql-starts.ts';

type SqlClient = Awaited<ReturnType<typeof startSqlClient>>;

/** The SQL client, started once for the start-rate rows (null without Postgres: the row says so). */
export async function sqlClientFor(c: DriveContext): Promise<SqlClient | null> {
  return c.dbUrl ? startSqlClient(c.dbUrl) : null;
}

/** One `nginx + SQL` run at `step` (one-delta streams at step.startsPerSec). */
export async function baselineRun(c: DriveContext, sql: SqlClient | null, base: Base, step: Step, floor: Row | undefined): Promise<Row> {
  if (!c.nginx) return failedRow(base, 'nginx is not installed and could not be installed');
  if (!sql) return failedRow(base, 'no Postgres: the baseline writes its statements to a real Postgres');
  const m = await measure(c.nginx.child.pid, c.sim.child.pid, ccJob(c.nginx.port, simCcPath(c), step), c.pgMeter, {
    beside: sql.beside({ n: step.k, perSec: step.startsPerSec }),
  });
  const row = toRow(base, m, floor, 'nginx relays each one-delta stream while a minimal pg client (named statements) writes each start\'s own statements at the same rate: createChat with its input and LlmCall, then finishLlmCallWithMessage');
  const relay = m.cpuUs === null ? null : m.cpuUs / m.result.streams;
  const client = m.besideCpuUs === null ? null : m.besideCpuUs / m.result.streams;
  return { ...row, cpuUsPerStart: relay === null || client === null ? null : r2(relay + client), relayCpuUsPerStart: r2(relay), sqlClientCpuUsPerStart: r2(client) };
}

const GOAL_RATE = 250;
const GOAL_RATIO = 2;

const sumOf = (...parts: (number | null | undefined)[]): number | null =>
  parts.some((p) => p === null || p === undefined) ? null : parts.reduce<number>((a, b) => a + b!, 0);
const share = (part: number | null | undefined, whole: number | null) => (part == null || !whole ? null : Math.round((part / whole) * 100));

/** Per start rate: the service's persisted start against the baseline, and each part's share of its own total. */
export function startBaselineSummary(rows: readonly Row[]): Record<string, unknown> {
  const sr = rows.filter((r) => r.scenario === 'start-rate' && !r.from);
  const out: Record<string, unknown> = {};
  let goal: boolean | null = null;
  for (const rate of [...new Set(sr.map((r) => r.rate))]) {
    const svc = sr.find((r) => r.rate === rate && r.target === 'service' && r.persist === true && r.variant === undefined);
    const base = sr.find((r) => r.rate === rate && r.target === 'nginx' && r.variant === 'sql');
    if (!svc || !base) continue;
    const svcTotal = sumOf(svc.cpuUsPerStart, svc.pgCpuUsPerStart);
    const baseTotal = sumOf(base.relayCpuUsPerStart, base.sqlClientCpuUsPerStart, base.pgCpuUsPerStart);
    const ratio = svcTotal !== null && baseTotal ? r2(svcTotal / baseTotal) : null;
    const procRatio = svc.cpuUsPerStart != null && base.cpuUsPerStart ? r2(svc.cpuUsPerStart / base.cpuUsPerStart) : null;
    const t = svc.cpuUsByThread;
    out[`rate${rate}`] = {
      service: { cpuUsPerStart: svc.cpuUsPerStart, pgCpuUsPerStart: svc.pgCpuUsPerStart ?? null, total: r2(svcTotal), byThread: t ?? null },
      baseline: { relay: base.relayCpuUsPerStart ?? null, sqlClient: base.sqlClientCpuUsPerStart ?? null, pgCpuUsPerStart: base.pgCpuUsPerStart ?? null, total: r2(baseTotal) },
      serviceOverBaseline: ratio,
      serviceOverBaselineWithoutPostgres: procRatio,
      sharesPct: {
        service: { main: share(t?.main, svcTotal), actor: share(t?.actor, svcTotal), rest: share(t?.rest, svcTotal), postgres: share(svc.pgCpuUsPerStart, svcTotal) },
        baseline: { relay: share(base.relayCpuUsPerStart, baseTotal), sqlClient: share(base.sqlClientCpuUsPerStart, baseTotal), postgres: share(base.pgCpuUsPerStart, baseTotal) },
      },
    };
    if (rate === GOAL_RATE) goal = ratio !== null && ratio <= GOAL_RATIO;
  }
  if (!Object.keys(out).length) return { skipped: 'no start-rate rows of both the persisted service and nginx + SQL in this run' };
  return { ...out, goal: `at ${GOAL_RATE} starts/s the service's CPU per persisted start, Postgres included, ≤ ${GOAL_RATIO} × nginx + SQL's`, pass: goal };
}
