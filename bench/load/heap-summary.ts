// Sums a .heapsnapshot's self sizes by node type and name (constructor for objects), largest first,
// so per-stream objects stand out when divided by the number of open streams.
// With --base, the sums of an earlier snapshot (the idle process) are taken off first, so only what
// the open streams keep is left.
//   node --import tsx bench/load/heap-summary.ts <file.heapsnapshot> [--base <idle.heapsnapshot>] [--per 2000] [--top 40]
import { addTo, printSums, readSnapshot, type Sums } from './heap-snapshot.ts';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const file = args.find((a, i) => a.endsWith('.heapsnapshot') && args[i - 1] !== '--base')!;
const base = args.includes('--base') ? args[args.indexOf('--base') + 1] : undefined;
const per = opt('--per', 1);
const top = opt('--top', 40);

/** Self size and count per name of one snapshot, and its total. */
function summarise(path: string): { sums: Sums; total: number } {
  const s = readSnapshot(path);
  const sums: Sums = new Map();
  let total = 0;
  for (let v = 0; v < s.N; v++) {
    total += s.selfSize(v);
    addTo(sums, s.nameOf(v), s.selfSize(v));
  }
  return { sums, total };
}

const { sums, total: loaded } = summarise(file);
let total = loaded;
if (base) {
  const idle = summarise(base);
  total -= idle.total;
  for (const [key, s] of idle.sums) {
    const t = sums.get(key) ?? { size: 0, count: 0 };
    sums.set(key, { size: t.size - s.size, count: t.count - s.count });
  }
}
printSums(`total self size ${(total / 1048576).toFixed(1)} MB (${(total / 1024 / per).toFixed(1)} KB per ${per === 1 ? 'snapshot' : 'stream'})`, sums, per, top);
