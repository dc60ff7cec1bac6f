// The suite's runner (`make test`): node:test's run() over the compiled test files, several files to a
// process, the longest first.
//
// Several files to a process: every test process loads its modules (the service's ~700 CommonJS
// modules, most of them the provider SDKs; PGlite's WASM) before its first test, most of a small file's
// CPU, and the suite is CPU-bound on this machine's two cores. The files of one directory run in one
// process, up to six, one after another, each file's tests in its own order: measured here, the 48 files
// of the small unit directories took 11 s of CPU in one process against 42 s in 48, and test/api's 40
// files 153 s in two against 223 s in 40. Files are written to run so: they close what they open, and a file's top-level
// hooks (before/after at module level) belong to the whole process, so hooks go inside a describe.
// A file still runs alone with `node --test <file>`, and SOLO files always do: the longest ones, which
// would serialise a group behind them (test/groups.mjs says which).
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
import { planProcesses } from './groups.mjs';

const GROUPS_DIR = path.resolve('.build/test-groups');

/** Each process's entry: a lone file's own path, or a written file importing the group's files in order. */
function entries(files) {
  mkdirSync(GROUPS_DIR, { recursive: true });
  return planProcesses(files).map(({ name, members }) => {
    if (members.length === 1) return path.resolve(members[0]);
    const file = path.join(GROUPS_DIR, `${name}.test.js`);
    const lines = members.map((m) => `import ${JSON.stringify(path.relative(GROUPS_DIR, path.resolve(m)))};`);
    writeFileSync(file, `// Written by test/run.mjs: these files' tests in one process, one file after another.\n${lines.join('\n')}\n`);
    return file;
  });
}

const stream = run({
  files: entries(process.argv.slice(2)),
  concurrency: Number(process.env.TEST_CONCURRENCY ?? 4),
  timeout: 600_000,
});
stream.on('test:fail', () => {
  process.exitCode = 1;
});
stream.compose(tap).pipe(process.stdout);
