// A fresh service with its own defaults, as a new user runs it: no MAX_ACTIVE_RUNS and none of the
// bench's shedding-off settings (targets.ts), only the provider and database wiring and `env`. It is
// warmed by a few starts one after another (the modules loaded, the pools open, the statements
// prepared), then left idle for a second: the burst and long-answer rows measure an idle instance,
// not a cold one.
import { serviceBody } from './bodies.ts';
import { startService, type SimUrls } from './targets.ts';
import { timedStream } from './timed-stream.ts';
import { sleep, type Child } from '../../test/helpers/procs.ts';

const WARM_STARTS = Number(process.env.BENCH_DEFAULTS_WARM ?? 50);

export interface DefaultService {
  pid: number;
  port: number;
  child: Child;
}

export async function withDefaultService<T>(sim: SimUrls, dbUrl: string | null, env: Record<string, string>, fn: (svc: DefaultService) => Promise<T>): Promise<T> {
  const { child, port } = await startService({ sim, databaseUrl: dbUrl, maxActiveRuns: 0, defaults: true, env });
  try {
    const body = serviceBody('provider_c', true, 2, 100);
    for (let i = 0; i < WARM_STARTS; i++) {
      const o = await timedStream({ port, body: body.replaceAll('__I__', `warm-${i}`), timeoutMs: 30_000 });
      if (!o.done) throw new Error(`warm-up start ${i} did not end done: ${o.why}`);
    }
    await sleep(1000);
    return await fn({ pid: child.pid, port, child });
  } finally {
    await child.stop();
  }
}
