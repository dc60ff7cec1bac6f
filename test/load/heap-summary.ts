// Sums a .heapsnapshot's self sizes by node type and name (constructor for objects), largest first,
// so per-stream objects stand out when divided by the number of open streams.
//   node --import tsx test/load/heap-summary.ts <file.heapsnapshot> [--per 2000] [--top 40]
import { readFileSync } from 'node:fs';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const file = args.find((a) => a.endsWith('.heapsnapshot'))!;
const per = opt('--per', 1);
const top = opt('--top', 40);
const snap = JSON.parse(readFileSync(file, 'utf8'));
const meta = snap.snapshot.meta;
const fields: string[] = meta.node_fields;
const types: string[] = meta.node_types[0];
const width = fields.length;
const iType = fields.indexOf('type');
const iName = fields.indexOf('name');
const iSize = fields.indexOf('self_size');
const nodes: number[] = snap.nodes;
const strings: string[] = snap.strings;
const sums = new Map<string, { size: number; count: number }>();
let total = 0;
for (let i = 0; i < nodes.length; i += width) {
  const type = types[nodes[i + iType]!]!;
  const name = type === 'object' || type === 'closure' || type === 'native' ? strings[nodes[i + iName]!]! : `(${type})`;
  const key = `${type}:${name.slice(0, 60)}`;
  const size = nodes[i + iSize]!;
  total += size;
  const s = sums.get(key) ?? { size: 0, count: 0 };
  s.size += size;
  s.count++;
  sums.set(key, s);
}
console.log(`total self size ${(total / 1048576).toFixed(1)} MB (${(total / 1024 / per).toFixed(1)} KB per ${per === 1 ? 'snapshot' : 'stream'})`);
for (const [key, s] of [...sums].sort((a, b) => b[1].size - a[1].size).slice(0, top)) {
  console.log(`${(s.size / 1024 / per).toFixed(2).padStart(9)} KB  ${(s.count / per).toFixed(1).padStart(8)} ×  ${key}`);
}
