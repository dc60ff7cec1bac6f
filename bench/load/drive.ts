// One measured run of one target at one step, for the scenarios that pick their own K and start rate
// (capacity.ts, start-rate.ts): the floor (the simulator read directly), nginx, the peer, and a fresh
// service (provider_c, persisted or not) per run.
import type { GenJob } from './gen.ts';
import { ccBody, serviceBody } from './bodies.ts';
import { failedRow, measure, toRow, type Base, type Row } from './measure.ts';
import type { PgCpuMeter } from './pg-cpu.ts';
import { peerHeaders, type SimUrls } from './targets.ts';
import type { Child } from '../../test/helpers/procs.ts';

export type WithService = <T>(sim: SimUrls, dbUrl: string | null, maxActiveRuns: number, fn: (svc: { pid: number; port: number; child: Child }) => Promise<T>, dataDir?: string, env?: Record<string, string>, root?: string) => Promise<T>;

export interface DriveContext {
  sim: { child: Child; urls: SimUrls; port: number };
  /** The simulator speaking cleartext HTTP/2 (prior knowledge), for the service's `h2c` runs; null: none. */
  h2cSim: { child: Child; urls: SimUrls } | null;
  nginx: { child: Child; port: number } | null;
  /** Null with `peerDown` saying why. */
  peer: { child: Child; port: number } | null;
  peerDown: string | null;
  dbUrl: string | null;
  pgMeter: PgCpuMeter | null;
  withService: WithService;
}

export interface Step {
  k: number;
  /** Deltas per second of each stream. */
  rate: number;
  deltas: number;
  startsPerSec: number;
}

/** `h2c`: the service calls the h2c simulator over HTTP/2 (PROVIDER_H2C_ORIGINS) instead of HTTP/1.1. */
export type Who = { target: 'floor' | 'nginx' | 'peer' } | { target: 'service'; persist: boolean; h2c?: boolean };

/** The service's environment for a provider origin spoken to over h2c. */
export const h2cEnv = (urls: SimUrls) => ({ PROVIDER_H2C_ORIGINS: new URL(urls.provider_c).origin });

/** The simulator's Chat Completions path (straight, or through nginx, which passes it on). */
export const simCcPath = (c: Pick<DriveContext, 'sim'>): string => new URL(c.sim.urls.provider_c).pathname + '/chat/completions';

/** A Chat Completions stream job at `step` against `port` (the floor, nginx, the peer). */
export const ccJob = (port: number, path: string, step: Step, headers: Record<string, string> = { authorization: 'Bearer k' }): GenJob => ({
  mode: 'streams', host: '127.0.0.1', port, path, headers, body: ccBody(step.deltas, step.rate), kind: 'cc', k: step.k, deltas: step.deltas, rate: step.rate, startsPerSec: step.startsPerSec,
});

/** Measures `who` at `step`; `floor` is the floor's row at the same step (null for the floor itself). */
export async function driveOnce(c: DriveContext, who: Who, base: Base, step: Step, floor: Row | undefined, note?: string): Promise<Row> {
  const { k, rate, deltas, startsPerSec } = step;
  const ccPath = simCcPath(c);
  const cc = (port: number, p: string, headers?: Record<string, string>): GenJob => ccJob(port, p, step, headers);
  switch (who.target) {
    case 'floor':
      return toRow(base, await measure(null, c.sim.child.pid, cc(c.sim.port, ccPath)), undefined, note);
    case 'nginx':
      if (!c.nginx) return failedRow(base, 'nginx is not installed and could not be installed');
      return toRow(base, await measure(c.nginx.child.pid, c.sim.child.pid, cc(c.nginx.port, ccPath)), floor, note);
    case 'peer':
      if (!c.peer) return failedRow(base, `the peer gateway does not stream here: ${c.peerDown}`);
      return toRow(base, await measure(c.peer.child.pid, c.sim.child.pid, cc(c.peer.port, '/v1/chat/completions', peerHeaders(c.sim.urls))), floor, note);
    case 'service': {
      const body = serviceBody('provider_c', who.persist, deltas, rate);
      const upstream = who.h2c ? c.h2cSim : c.sim;
      if (!upstream) return failedRow(base, 'no h2c simulator (BENCH_EXTRAS without h2c)');
      return c.withService(upstream.urls, c.dbUrl, k * 2 + 1000, async (svc) => {
        const job: GenJob = { mode: 'streams', host: '127.0.0.1', port: svc.port, path: '/v1/chat-completions/stream', body, kind: 'sse', k, deltas, rate, startsPerSec };
        return toRow(base, await measure(svc.pid, upstream.child.pid, job, who.persist ? c.pgMeter : null), floor, note);
      }, undefined, who.h2c ? h2cEnv(upstream.urls) : undefined);
    }
  }
}
