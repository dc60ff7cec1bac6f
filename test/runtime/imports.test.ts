// The boundaries, checked on the source: the runtime imports nothing outside its folder (and nothing
// from src/), product code never imports test code, and no module imports itself through a circle
// (type-only imports included: a circle of types is still a knot for a reader).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(import.meta.dirname, '../..');
const RUNTIME = path.join(ROOT, 'actors/runtime');

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...files(full));
    else if (/\.(ts|mjs)$/.test(name)) out.push(full);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Relative imports of a file, resolved to absolute paths. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2]!;
    if (spec.startsWith('.')) out.push(path.resolve(path.dirname(file), spec));
  }
  return out;
}

const product = [...files(path.join(ROOT, 'src')), ...files(path.join(ROOT, 'actors'))];

test('the runtime imports nothing outside actors/runtime', () => {
  const bad = files(RUNTIME).flatMap((f) => imports(f).filter((i) => !i.startsWith(RUNTIME + path.sep)).map((i) => `${path.relative(ROOT, f)} → ${path.relative(ROOT, i)}`));
  assert.deepEqual(bad, []);
});

test('product code never imports test code', () => {
  const testDir = path.join(ROOT, 'test') + path.sep;
  const bad = product.flatMap((f) => imports(f).filter((i) => i.startsWith(testDir)).map((i) => `${path.relative(ROOT, f)} → ${path.relative(ROOT, i)}`));
  assert.deepEqual(bad, []);
});

test('no import circle in product code', () => {
  const graph = new Map(product.map((f) => [f, imports(f).filter((i) => product.includes(i))]));
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const next of graph.get(f) ?? []) {
      if (state.get(next) === 'open') circles.push(stack.slice(stack.indexOf(next)).concat(next).map((p) => path.relative(ROOT, p)).join(' → '));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of product) if (!state.has(f)) visit(f);
  assert.deepEqual(circles, []);
});
