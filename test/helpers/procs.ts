// Child processes of the bench and what /proc says about them. Every child is started by us,
// tracked here, and stopped by its own pid (never by name) when the bench ends or fails.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { createInterface } from 'node:readline';
import { openFilesLimit as readOpenFilesLimit } from '../../src/base/open-files.ts';

export interface Child {
  name: string;
  proc: ChildProcess;
  pid: number;
  /** stdout lines seen so far (bounded), for error messages. */
  lines: string[];
  stop(): Promise<void>;
}

const children = new Set<Child>();

export interface StartOptions {
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Resolves once a stdout or stderr line satisfies this (the line is returned); unset: at once. */
  ready?: (line: string) => boolean;
  readyTimeoutMs?: number;
  /** Where stderr goes: 'inherit' shows it, 'pipe' keeps it in `lines`. */
  stderr?: 'inherit' | 'pipe';
  /** Keep stdin open as a pipe (a long-lived generator takes its jobs there). */
  stdin?: boolean;
  onLine?: (line: string) => void;
}

export function start(name: string, cmd: string, args: string[], o: StartOptions = {}): Promise<{ child: Child; line: string }> {
  const proc = spawn(cmd, args, {
    cwd: o.cwd,
    env: { ...process.env, ...o.env },
    stdio: [o.stdin ? 'pipe' : 'ignore', 'pipe', o.stderr === 'inherit' ? 'inherit' : 'pipe'],
  });
  const lines: string[] = [];
  let exited = false;
  const exitP = new Promise<void>((r) => proc.once('exit', () => ((exited = true), r())));
  const child: Child = {
    name,
    proc,
    pid: proc.pid!,
    lines,
    async stop() {
      children.delete(child);
      if (exited) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exitP;
      clearTimeout(t);
    },
  };
  children.add(child);
  return new Promise((resolve, reject) => {
    let done = !o.ready;
    if (done) resolve({ child, line: '' });
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      void child.stop();
      reject(new Error(`${name} not ready after ${o.readyTimeoutMs ?? 30_000} ms:\n${lines.slice(-20).join('\n')}`));
    }, o.readyTimeoutMs ?? 30_000);
    if (done) clearTimeout(timer);
    const onLine = (line: string): void => {
      if (lines.length < 500) lines.push(line);
      o.onLine?.(line);
      if (!done && (!o.ready || o.ready(line))) {
        done = true;
        clearTimeout(timer);
        resolve({ child, line });
      }
    };
    createInterface({ input: proc.stdout! }).on('line', onLine);
    if (proc.stderr) createInterface({ input: proc.stderr }).on('line', onLine);
    proc.once('exit', (code, signal) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(new Error(`${name} exited (${code ?? signal}) before it was ready:\n${lines.slice(-20).join('\n')}`));
    });
  });
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((c) => c.stop()));
}

/** `pid` and its child processes (nginx: master + worker); threads are already in a pid's figures. */
export function processTree(pid: number): number[] {
  const out = [pid];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const kids = readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim();
      if (kids) for (const k of kids.split(' ')) out.push(...processTree(Number(k)));
    }
  } catch {
    // gone, or no children file: the pid alone
  }
  return out;
}

/** utime + stime from a /proc `stat` file (a process's or a thread's), in microseconds (clock ticks, 100/s). */
function statMicros(file: string): number {
  const f = readFileSync(file, 'utf8').split(') ')[1]!.split(' ');
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** utime + stime of the process tree (all threads), in microseconds. */
export function cpuMicros(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) sum += statMicros(`/proc/${p}/stat`);
  return sum;
}

/** utime + stime of each thread of the process itself (not its children), in microseconds, by thread id. */
export function threadCpuMicros(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), statMicros(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // the thread ended since the listing
    }
  }
  return out;
}

/**
 * Voluntary context switches of every thread of the process tree (nginx's workers are its children):
 * each is a sleep (epoll_wait, a futex), so the thread's next run is a wake-up.
 */
export function wakeUps(pid: number): number {
  let n = 0;
  for (const p of processTree(pid)) {
    for (const tid of readdirSync(`/proc/${p}/task`)) {
      try {
        n += Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${p}/task/${tid}/status`, 'utf8'))![1]);
      } catch {
        // the thread ended since the listing
      }
    }
  }
  return n;
}

export function rssKb(pid: number): number {
  let sum = 0;
  for (const p of processTree(pid)) {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
    sum += m ? Number(m[1]) : 0;
  }
  return sum;
}

/** RSS (rssKb) every `everyMs` until stopped, each sample with its time (performance.now()). */
export function rssSamples(pid: number, everyMs = 200): { stop(): Array<{ at: number; kb: number }> } {
  const samples: Array<{ at: number; kb: number }> = [];
  const take = (): void => {
    try {
      const kb = rssKb(pid);
      samples.push({ at: performance.now(), kb });
    } catch {
      // the process went away: keep what we have
    }
  };
  take();
  const t = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(t);
      take();
      return samples;
    },
  };
}

/** The soft limit on open files of this process (children inherit it); unknown counts as no limit. */
export function openFilesLimit(): number {
  return readOpenFilesLimit() ?? Infinity;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * BENCH_QUIET_LOAD: waits (at most BENCH_QUIET_WAIT_S, default 120) for the 1-minute load average to fall
 * below it, so a run does not start in the wake of the previous one. Returns the load it starts at.
 */
export async function waitForQuiet(): Promise<number> {
  const threshold = Number(process.env.BENCH_QUIET_LOAD ?? 0);
  const end = Date.now() + Number(process.env.BENCH_QUIET_WAIT_S ?? 120) * 1000;
  while (threshold > 0 && os.loadavg()[0]! >= threshold && Date.now() < end) await sleep(1000);
  return Number(os.loadavg()[0]!.toFixed(2));
}

/** A running child by its name (e.g. to quote its log in a failure note). */
export function childByName(name: string): Child | undefined {
  for (const c of children) if (c.name === name) return c;
  return undefined;
}
