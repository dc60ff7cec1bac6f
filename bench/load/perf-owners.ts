// Who spends a sampled CPU: each `perf script` sample of the service goes to one owner, so a start's or a
// delta's CPU can be read as "ours / a dependency we must keep / Node / V8 / the kernel". The question it
// answers is the issue's: how much of the gap to nginx is code we can change.
//
// A sample whose leaf is in the kernel is the kernel's (a syscall, its wake-up, loopback TCP), whoever
// called it: nginx makes the same syscalls. Otherwise it belongs to the innermost JavaScript frame's file,
// so the V8 runtime work a function causes (property lookups, JSON, allocation that triggers a scavenge)
// is charged to that function. Samples with no JavaScript frame at all are V8's helper threads (GC,
// compiler) or native code reached straight from the event loop (uWS, libuv, the message port's
// deserializer).
import { execFileSync } from 'node:child_process';

export type Owner =
  | 'kernel'
  | 'ours'
  | 'openai'
  | 'undici'
  | 'eventsource-parser'
  | 'other packages'
  | 'node internals'
  | 'V8 helper threads (GC, compiler)'
  | 'native, no JS caller (uWS, libuv, V8)';

const OWNERS: Owner[] = ['kernel', 'ours', 'openai', 'undici', 'eventsource-parser', 'other packages', 'node internals', 'V8 helper threads (GC, compiler)', 'native, no JS caller (uWS, libuv, V8)'];

/** The owner of one JavaScript frame's symbol (`JS:*name file:line:col` with --perf-basic-prof). */
function jsOwner(sym: string): Owner | null {
  const file = sym.slice(sym.indexOf(' ') + 1);
  if (!sym.startsWith('JS:') || sym.startsWith('JS:wasm') || file === sym) return null;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1];
  if (pkg === 'openai' || pkg === 'undici' || pkg === 'eventsource-parser') return pkg;
  if (pkg) return 'other packages';
  if (file.startsWith('node:')) return 'node internals';
  return 'ours';
}

function ownerOf(frames: Array<{ kernel: boolean; sym: string }>, helperThread: boolean): Owner {
  if (frames[0]?.kernel) return 'kernel';
  for (const f of frames) {
    const owner = jsOwner(f.sym);
    if (owner) return owner;
  }
  return helperThread ? 'V8 helper threads (GC, compiler)' : 'native, no JS caller (uWS, libuv, V8)';
}

/**
 * Shares of the samples in `data` by owner (0..1). `eventLoopTids` are the threads that run JavaScript
 * (the main thread and the actor threads); every other thread of the process is one of V8's helpers.
 */
export function ownerShares(data: string, eventLoopTids: Set<string>): Map<Owner, number> {
  const text = execFileSync('perf', ['script', '-i', data, '-F', 'tid,ip,sym'], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  const counts = new Map<Owner, number>(OWNERS.map((o) => [o, 0]));
  let total = 0;
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n').filter((l) => l.trim());
    if (lines.length < 2) continue;
    const tid = lines[0]!.trim().split(/\s+/)[0]!;
    const frames = lines.slice(1).map((l) => {
      const [addr = '', ...rest] = l.trim().split(/\s+/);
      return { kernel: addr.startsWith('ffffffff'), sym: rest.join(' ') };
    });
    const owner = ownerOf(frames, !eventLoopTids.has(tid));
    counts.set(owner, counts.get(owner)! + 1);
    total++;
  }
  for (const [o, n] of counts) counts.set(o, total ? n / total : 0);
  return counts;
}

/**
 * The `n` threads that ran the most samples (the main thread and the actor threads), from the lines
 * of `perf report --sort pid` (`  56.46%  5447:node`), busiest first.
 */
export function busiestTids(byThread: string, n: number): Set<string> {
  const tids = byThread.split('\n').map((l) => /(\d+):/.exec(l)?.[1]).filter((t): t is string => !!t);
  return new Set(tids.slice(0, n));
}

/** A table of the shares, with each owner's µs of `unitUs` (a start's or a delta's whole CPU) when known. */
export function ownerTable(shares: Map<Owner, number>, unitUs: number | null, unit: string): string {
  const rows = [...shares].filter(([, s]) => s > 0).sort((a, b) => b[1] - a[1]);
  const head = `| owner | share | ${unitUs === null ? '' : `µs per ${unit} |`}`;
  const line = `| --- | --: |${unitUs === null ? '' : ' --: |'}`;
  const body = rows.map(([o, s]) => `| ${o} | ${(s * 100).toFixed(1)} % |${unitUs === null ? '' : ` ${(s * unitUs).toFixed(unitUs > 200 ? 0 : 1)} |`}`);
  return [head, line, ...body].join('\n');
}
