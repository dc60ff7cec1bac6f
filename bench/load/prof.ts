// Summarizes V8 .cpuprofile files (from `BENCH_PROFILE=1`, i.e. `node --cpu-prof`): per profile
// (one per thread), the busy share, the top functions by self time, and self time grouped by
// package or project folder, so the cost of a stream can be read without a GUI.
//
//   node --import tsx bench/load/prof.ts bench/out/prof/*.cpuprofile [--top 25]
import { readFileSync } from 'node:fs';
import path from 'node:path';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const args = process.argv.slice(2);
const topIdx = args.indexOf('--top');
const TOP = topIdx >= 0 ? Number(args[topIdx + 1]) : 25;
// --window FROM:TO (seconds since the profile began) keeps only the samples in it, e.g. the
// measured job without the process's start-up; --timeline prints busy ms per second to find it.
const winIdx = args.indexOf('--window');
const [FROM, TO] = winIdx >= 0 ? args[winIdx + 1]!.split(':').map(Number) : [0, Infinity];
const TIMELINE = args.includes('--timeline');
const files = args.filter((a) => a.endsWith('.cpuprofile'));

/** Groups a script URL: a package name, a project folder (src/http, actors), or a Node internal. */
function group(url: string): string {
  if (!url) return '(native/VM)';
  if (url.startsWith('node:')) return url.split('/')[0]!;
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 13).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const m = /\/(src\/[^/]+|actors|test\/[^/]+)\//.exec(url);
  return m ? m[1]! : path.basename(url);
}

for (const file of files) {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  const perSecond: number[] = [];
  let at = 0;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.timeDeltas[i] ?? 0;
    at += dt;
    const sec = at / 1e6;
    if (sec < FROM! || sec > TO!) continue;
    self.set(p.samples[i]!, (self.get(p.samples[i]!) ?? 0) + dt);
    if (byId.get(p.samples[i]!)!.callFrame.functionName !== '(idle)') perSecond[Math.floor(sec)] = (perSecond[Math.floor(sec)] ?? 0) + dt / 1000;
  }
  const total = (Math.min(TO!, (p.endTime - p.startTime) / 1e6) - FROM!) * 1000;
  if (TIMELINE) console.log(`  busy ms per second: ${perSecond.map((ms, i) => `${i}:${(ms ?? 0).toFixed(0)}`).join(' ')}`);
  let idle = 0;
  const fn = new Map<string, number>();
  const grp = new Map<string, number>();
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const name = n.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') idle += us;
    if (name === '(idle)') continue;
    const key = `${name}  ${n.callFrame.url ? `${path.basename(n.callFrame.url)}:${n.callFrame.lineNumber + 1}` : ''}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const g = ['(garbage collector)', '(program)'].includes(name) ? name : group(n.callFrame.url);
    grp.set(g, (grp.get(g) ?? 0) + us);
  }
  const busy = [...fn.values()].reduce((a, b) => a + b, 0) / 1000;
  console.log(`\n== ${path.basename(file)}: ${total.toFixed(0)} ms profiled, busy ${busy.toFixed(0)} ms (${((busy / total) * 100).toFixed(0)}%), idle ${(idle / 1000).toFixed(0)} ms`);
  if (busy < 50) continue;
  console.log('  by package/folder (self time):');
  for (const [g, us] of [...grp].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`    ${((us / 1000 / busy) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${g}`);
  console.log(`  top ${TOP} functions (self time):`);
  for (const [k, us] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`    ${((us / 1000 / busy) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
}
