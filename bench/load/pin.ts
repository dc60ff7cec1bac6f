// Issue 48: the capacity search pinned, so that each target gets one core nothing else uses. The
// target (the service with all its threads, or nginx with its one worker, or the peer) runs on
// BENCH_PIN_TARGET_CPUS, and what the bench starts to load it (the generator, the simulator, the
// harness itself) on BENCH_PIN_LOAD_CPUS, with `taskset` (util-linux). Postgres and Redis are system
// services the bench does not start: they are left where the system runs them, and the note says so.
// Pinned only when the machine has two cores or more and taskset is there (BENCH_PIN=0: never).
//
// `taskset -a -p` sets the affinity of every thread a process has; a thread made later inherits its
// maker's, so a service pinned once it answers keeps all its threads (actor threads, libuv's pool,
// V8's helpers) on the target's core. A child the harness spawns inherits the harness's affinity: the
// generator and a fresh service start on the load core, and each service moves to the target core
// before its warm-up.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { processTree } from '../../test/helpers/procs.ts';

const env = process.env;

export interface Pinning {
  targetCpus: string;
  loadCpus: string;
  /** What meta.pinned and each pinned row say. */
  note: string;
}

/** `taskset`'s path, or null when it is not installed. */
function taskset(): string | null {
  try {
    return execFileSync('sh', ['-c', 'command -v taskset'], { encoding: 'utf8' }).trim() || null;
  } catch {
    return null;
  }
}

/** The pinning the capacity search will use, or why there is none. */
export function pinPlan(cores = os.availableParallelism(), hasTaskset = taskset() !== null): Pinning | { none: string } {
  if (env.BENCH_PIN === '0') return { none: 'not pinned (BENCH_PIN=0)' };
  if (cores < 2) return { none: `not pinned: ${cores} core` };
  if (!hasTaskset) return { none: 'not pinned: taskset (util-linux) is not installed' };
  const targetCpus = env.BENCH_PIN_TARGET_CPUS ?? '0';
  const loadCpus = env.BENCH_PIN_LOAD_CPUS ?? '1';
  return {
    targetCpus,
    loadCpus,
    note: `the target (the service with all its threads, nginx's master and one worker, the peer) on CPU ${targetCpus}; `
      + `the generator, the simulator and the harness on CPU ${loadCpus} (taskset); Postgres and Redis are system services, not pinned`,
  };
}

/** Sets the CPUs of every thread of `pid` and of its child processes (nginx's worker). */
export function pinProcess(pid: number, cpus: string): void {
  for (const p of processTree(pid)) {
    try {
      execFileSync('taskset', ['-a', '-p', '-c', cpus, String(p)], { stdio: 'ignore' });
    } catch {
      // gone since the listing: nothing to pin
    }
  }
}

/** Every CPU of the machine (not availableParallelism: that is this process's affinity, pinned too). */
export const allCpus = (): string => `0-${os.cpus().length - 1}`;
