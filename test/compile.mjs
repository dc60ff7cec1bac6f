// `make test` runs the suite on a compiled copy of the tree, in .build/: every TypeScript file as
// JavaScript beside it, everything else (sources included) as a link to the original.
//
// Why: the suite is CPU-bound on two cores, and loading the service through tsx's loader hooks cost
// about 2 s of CPU more than the same code as JavaScript, in each of ~130 test processes, ~50 service
// processes and every actor thread. tsx compiles with esbuild too, so the code that runs is the same;
// what goes is the loader, which in Node 20 answers every import from a thread of its own.
//
// Layout is kept so that paths taken from import.meta.url (sql/, web/, worker entries, docs) resolve
// as in the source tree. The plain .mjs entries are copied, not linked: Node would resolve a link to
// the original and they would look for the TypeScript next to it; each picks the .js when it is there.
// `make run`, `make bench` and a single test run with `node --import tsx` keep running the sources.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = path.join(ROOT, '.build');
const COMPILED = ['src', 'actors', 'test', 'bench'];
const SKIP = new Set(['.build', '.git', 'data']);

const tsFiles = [];

/** Mirrors `dir` (relative to ROOT) into OUT: folders made, .mjs copied, everything else linked. */
function mirror(dir) {
  mkdirSync(path.join(OUT, dir), { recursive: true });
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      // bench/out holds raw bench output (large, never imported): linked, not walked.
      if (entry.name !== 'node_modules' && entry.name !== 'out') mirror(rel);
      else link(rel);
      continue;
    }
    if (entry.name.endsWith('.mjs')) copyFileSync(path.join(ROOT, rel), path.join(OUT, rel));
    else link(rel);
    if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) tsFiles.push(rel);
  }
}

function link(rel) {
  symlinkSync(path.join(ROOT, rel), path.join(OUT, rel));
}

rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT);
for (const entry of readdirSync(ROOT, { withFileTypes: true })) {
  if (SKIP.has(entry.name)) continue;
  if (entry.isDirectory() && COMPILED.includes(entry.name)) mirror(entry.name);
  else link(entry.name);
}

// One file in, one file out, as tsx does it (esbuild, ESM, the tsconfig's target); then the relative
// `.ts` specifiers point at the `.js` files. esbuild prints every specifier in double quotes.
await build({
  entryPoints: tsFiles.map((f) => path.join(ROOT, f)),
  outdir: OUT,
  outbase: ROOT,
  format: 'esm',
  platform: 'node',
  target: 'es2022',
  sourcemap: 'inline',
  logLevel: 'warning',
  write: true,
  outExtension: { '.js': '.js' },
});
const SPECIFIER = /((?:\bfrom|\bimport)\s*\(?\s*)"(\.{1,2}\/[^"\n]*?)\.ts"/g;
for (const f of tsFiles) {
  const out = path.join(OUT, f.replace(/\.ts$/, '.js'));
  const text = readFileSync(out, 'utf8');
  writeFileSync(out, text.replace(SPECIFIER, '$1"$2.js"'));
}
console.log(`test/compile.mjs: ${tsFiles.length} files compiled into .build/`);
