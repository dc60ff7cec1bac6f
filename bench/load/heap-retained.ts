// What each per-stream object keeps alive: the dominator tree of a .heapsnapshot (strong edges from
// the root; Cooper, Harvey and Kennedy's iterative algorithm), then the retained size of every class
// with about one instance per open stream, per stream. With --under CLASS, the self sizes of all that
// the instances of CLASS dominate, grouped by name: what a retained figure is made of.
//   node --import tsx bench/load/heap-retained.ts <file.heapsnapshot> [--per 2000] [--under object:Reply]
import { addTo, printSums, readSnapshot, type Sums } from './heap-snapshot.ts';

const args = process.argv.slice(2);
const file = args.find((a) => a.endsWith('.heapsnapshot'))!;
const per = args.includes('--per') ? Number(args[args.indexOf('--per') + 1]) : 1;
const under = args.includes('--under') ? args[args.indexOf('--under') + 1] : undefined;

const snap = readSnapshot(file);
const { N, W, EW, nodes, edges, iEdges, eType, eTo, edgeTypes, nameOf, selfSize } = snap;
const WEAK = edgeTypes.indexOf('weak');
const SHORTCUT = edgeTypes.indexOf('shortcut');

const firstEdge = new Uint32Array(N + 1);
for (let v = 0, e = 0; v < N; v++) {
  firstEdge[v] = e;
  e += nodes[v * W + iEdges]! * EW;
}
firstEdge[N] = edges.length;

/** Calls fn with every strong successor of v (weak and shortcut edges keep nothing alive). */
function eachSuccessor(v: number, fn: (w: number) => void): void {
  for (let e = firstEdge[v]!; e < firstEdge[v + 1]!; e += EW) {
    const t = edges[e + eType];
    if (t !== WEAK && t !== SHORTCUT) fn(edges[e + eTo]! / W);
  }
}

// Post-order numbering from the root (node 0), iteratively: snapshots are too deep for recursion.
const post = new Int32Array(N).fill(-1);
const order: number[] = [];
const cursor = new Uint32Array(N);
const seen = new Uint8Array(N);
const stack = [0];
seen[0] = 1;
cursor[0] = firstEdge[0]!;
while (stack.length) {
  const v = stack[stack.length - 1]!;
  let next = -1;
  while (next < 0 && cursor[v]! < firstEdge[v + 1]!) {
    const e = cursor[v]!;
    cursor[v] = e + EW;
    const t = edges[e + eType];
    const w = edges[e + eTo]! / W;
    if (t !== WEAK && t !== SHORTCUT && !seen[w]) next = w;
  }
  if (next < 0) {
    stack.pop();
    post[v] = order.length;
    order.push(v);
  } else {
    seen[next] = 1;
    cursor[next] = firstEdge[next]!;
    stack.push(next);
  }
}

const predStart = new Uint32Array(N + 1);
for (const v of order) eachSuccessor(v, (w) => predStart[w + 1]!++);
for (let i = 1; i <= N; i++) predStart[i]! += predStart[i - 1]!;
const preds = new Uint32Array(predStart[N]!);
const fill = predStart.slice();
for (const v of order) eachSuccessor(v, (w) => (preds[fill[w]!++] = v));

const idom = new Int32Array(N).fill(-1);
idom[0] = 0;
const intersect = (a: number, b: number) => {
  while (a !== b) {
    while (post[a]! < post[b]!) a = idom[a]!;
    while (post[b]! < post[a]!) b = idom[b]!;
  }
  return a;
};
for (let changed = true; changed; ) {
  changed = false;
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k]!;
    if (v === 0) continue;
    let d = -1;
    for (let p = predStart[v]!; p < predStart[v + 1]!; p++) {
      const u = preds[p]!;
      if (idom[u] !== -1) d = d === -1 ? u : intersect(u, d);
    }
    if (d !== idom[v]) {
      idom[v] = d;
      changed = true;
    }
  }
}

const retained = new Float64Array(N);
for (const v of order) {
  retained[v]! += selfSize(v);
  if (v !== 0) retained[idom[v]!]! += retained[v]!;
}

if (under) {
  const isRoot = new Uint8Array(N);
  for (const v of order) if (nameOf(v) === under) isRoot[v] = 1;
  const sums: Sums = new Map();
  for (const v of order) {
    let u = idom[v]!;
    while (u !== 0 && !isRoot[u]) u = idom[u]!;
    if (u !== 0) addTo(sums, nameOf(v), selfSize(v));
  }
  const roots = isRoot.reduce((n, x) => n + x, 0);
  printSums(`dominated by ${under} (${roots} instances), self size per instance:`, sums, roots || 1);
} else {
  const sums: Sums = new Map();
  for (const v of order) if (snap.typeOf(v) !== 'synthetic') addTo(sums, nameOf(v), retained[v]!);
  printSums(`retained size per stream of classes with about one instance per stream (${per} streams):`, sums, per, 40, (c) => per === 1 || (c >= per * 0.9 && c <= per * 1.3));
}
