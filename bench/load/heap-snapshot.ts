// Reading a V8 .heapsnapshot for the memory tools (heap-summary.ts, heap-retained.ts): the flat node
// and edge arrays with their field offsets, a node's name, and sums per name printed per stream.
import { readFileSync } from 'node:fs';

export interface Snapshot {
  /** Node count; node v's fields start at v * W in `nodes`. */
  N: number;
  W: number;
  /** Fields per edge; node v's edges are a run of edge_count of them, in node order. */
  EW: number;
  nodes: number[];
  edges: number[];
  /** Offsets of a node's fields and an edge's fields. */
  iType: number;
  iSize: number;
  iEdges: number;
  eType: number;
  eTo: number;
  nodeTypes: string[];
  edgeTypes: string[];
  selfSize(v: number): number;
  typeOf(v: number): string;
  /** `object:Constructor`, `closure:name`, `native:name`; `(type)` for the rest (strings, arrays, code…). */
  nameOf(v: number): string;
}

export function readSnapshot(path: string): Snapshot {
  const snap = JSON.parse(readFileSync(path, 'utf8'));
  const meta = snap.snapshot.meta;
  const nf: string[] = meta.node_fields;
  const ef: string[] = meta.edge_fields;
  const nodes: number[] = snap.nodes;
  const strings: string[] = snap.strings;
  const nodeTypes: string[] = meta.node_types[0];
  const W = nf.length;
  const iType = nf.indexOf('type');
  const iName = nf.indexOf('name');
  const iSize = nf.indexOf('self_size');
  const typeOf = (v: number) => nodeTypes[nodes[v * W + iType]!]!;
  return {
    N: nodes.length / W,
    W,
    EW: ef.length,
    nodes,
    edges: snap.edges,
    iType,
    iSize,
    iEdges: nf.indexOf('edge_count'),
    eType: ef.indexOf('type'),
    eTo: ef.indexOf('to_node'),
    nodeTypes,
    edgeTypes: meta.edge_types[0],
    selfSize: (v) => nodes[v * W + iSize]!,
    typeOf,
    nameOf(v) {
      const type = typeOf(v);
      return (type === 'object' || type === 'closure' || type === 'native' ? `${type}:${strings[nodes[v * W + iName]!]}` : `(${type})`).slice(0, 70);
    },
  };
}

export type Sums = Map<string, { size: number; count: number }>;

export function addTo(sums: Sums, key: string, size: number): void {
  const s = sums.get(key) ?? { size: 0, count: 0 };
  s.size += size;
  s.count++;
  sums.set(key, s);
}

/** The largest `top` sums (those `keep` accepts), each divided by `over` (streams, or instances). */
export function printSums(title: string, sums: Sums, over: number, top = 40, keep: (count: number) => boolean = () => true): void {
  console.log(title);
  const rows = [...sums].filter(([, s]) => keep(s.count)).sort((a, b) => b[1].size - a[1].size).slice(0, top);
  for (const [key, s] of rows) console.log(`${(s.size / 1024 / over).toFixed(2).padStart(8)} KB  ${(s.count / over).toFixed(2).padStart(7)} ×  ${key}`);
}
