// The suite's runner (`make test`): node:test's run() over the compiled test files, several files to a
// process, the longest first.
//
// Several files to a process: a test process spends most of its CPU loading modules (the service's
// ~170 CommonJS modules, pg, PGlite's WASM) before its first test, and the suite is CPU-bound on this
// machine's two cores. The files of one directory run in one process, up to GROUP_SIZE at a time, one
// after another, each file's tests in its own order: measured here, the 48 files of the small unit
// directories took 12 s of CPU in one process against 42 s in 48, and test/api's 40 files 154 s in two
// against 223 s in 40. Files are written to run so: they close what they open, and a file's top-level
// hooks (before/after at module level) belong to the whole process, so hooks go inside a describe.
// A file still runs alone with `node --test <file>`, and SOLO files always do: the longest ones, which
// would serialise a group behind them.
//
// The longest first: the suite ends when its last process does, so SOLO files and the biggest groups
// start first and the small ones fill the gaps (node --test would run its files in name order).
//
// Usage: node --liftoff-only test/run.mjs <file.js>… (the node flags pass on to each process).
// TEST_CONCURRENCY (default 4) is how many processes run at once.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { run } from 'node:test';
import { tap } from 'node:test/reporters';

/** Each alone, first, in this order: the files that took 20 s or more alone here. */
const SOLO = [
  'test/cluster/instances',
  'test/api/streams',
  'test/api/idempotency-after-stops',
  'test/api/recovery',
  'test/deploy/rolling-restart',
  'test/cluster/fencing',
  'test/fuzz/fuzz',
];
const GROUP_SIZE = 6;

const GROUPS_DIR = path.resolve('.build/test-groups');
const name = (file) => path.relative('.build', file).replace(/\.test\.js$/, '');

/** The processes to run: a SOLO file's own path, or a written group file importing its files in name order. */
function processes(files) {
  const solo = SOLO.flatMap((s) => files.filter((f) => name(f) === s));
  const byDir = new Map();
  for (const f of [...files].sort()) {
    if (solo.includes(f)) continue;
    const dir = path.dirname(name(f));
    byDir.set(dir, [...(byDir.get(dir) ?? []), f]);
  }
  const groups = [];
  for (const [dir, members] of byDir) {
    const count = Math.ceil(members.length / GROUP_SIZE);
    // Even groups: 7 files as 4 + 3, not 6 + 1.
    for (let g = 0; g < count; g++) groups.push({ dir, members: members.filter((_, i) => i % count === g), index: g + 1 });
  }
  groups.sort((a, b) => b.members.length - a.members.length || a.dir.localeCompare(b.dir));
  mkdirSync(GROUPS_DIR, { recursive: true });
  const written = groups.map(({ dir, members, index }) => {
    if (members.length === 1) return path.resolve(members[0]);
    const file = path.join(GROUPS_DIR, `${dir.replace(/^test\//, '').replaceAll('/', '-')}-${index}.test.js`);
    const lines = members.map((m) => `import ${JSON.stringify(path.relative(GROUPS_DIR, path.resolve(m)))};`);
    writeFileSync(file, `// Written by test/run.mjs: these files' tests in one process, one file after another.\n${lines.join('\n')}\n`);
    return file;
  });
  return [...solo.map((f) => path.resolve(f)), ...written];
}

const stream = run({
  files: processes(process.argv.slice(2)),
  concurrency: Number(process.env.TEST_CONCURRENCY ?? 4),
  timeout: 600_000,
});
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.compose(tap).pipe(process.stdout);
