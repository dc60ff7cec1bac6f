// The layer check itself (make deps): the project's own .dependency-cruiser.cjs and the runtime's own
// tsconfig, run on a small tree shaped like the project's. A clean tree passes; the same tree with an
// import of each forbidden kind added fails, naming exactly those imports. So a rule that stopped matching
// (a renamed folder, a broken pattern, type-only imports no longer seen) fails here instead of letting
// `make deps` pass silently. The fixture names its imports by repository path (`@{src/base/config.ts}`, made
// relative when the tree is written), so it reads as the real tree does and moves with it.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('layers/layers', () => {
  const ROOT = path.resolve(import.meta.dirname, '../..');
  const BIN = path.join(ROOT, 'node_modules/.bin');

  /** A tree with one module per layer, each importing the layers below it as the real code does. */
  const CLEAN: Record<string, string> = {
    'actors/runtime/mailbox.ts': `export const mailbox = [];`,
    'actors/runtime/internal.ts': `export const internal = 1;`,
    // The runtime as a package: what the service may import of it (when the rules check its exports).
    'actors/runtime/package.json': JSON.stringify({ type: 'module', exports: { './mailbox': './mailbox.ts' } }),
    'src/base/config.ts': `export const config = {};`,
    'src/base/errors.ts': `export class ServiceError extends Error {}`,
    'src/sim/server.ts': `export const sim = 1;`,
    'src/db/pool.ts': `import { config } from '@{src/base/config.ts}';\nexport const pool = config;`,
    'src/store/chats.ts': `import { pool } from '@{src/db/pool.ts}';\nexport const chats = pool;`,
    'actors/chat-run.ts': `import { mailbox } from '@{actors/runtime/mailbox.ts}';\nimport { chats } from '@{src/store/chats.ts}';\nexport const chatRun = [mailbox, chats];`,
    'src/http/to-http-error.ts': `import { ServiceError } from '@{src/base/errors.ts}';\nimport { pool } from '@{src/db/pool.ts}';\nexport const map = [ServiceError, pool];`,
    'src/service/runs.ts': `import { chatRun } from '@{actors/chat-run.ts}';\nexport const runs = chatRun;`,
    'src/service/metrics.ts': `import { map } from '@{src/http/to-http-error.ts}';\nexport const metrics = map;`,
    'src/routes/system.ts': `import type { runs } from '@{src/service/runs.ts}';\nexport type Runs = typeof runs;`,
    'src/app/app.ts': `import type { Runs } from '@{src/routes/system.ts}';\nimport { sim } from '@{src/sim/server.ts}';\nexport const app = (r: Runs) => [r, sim];`,
    'test/helpers/procs.ts': `import { app } from '@{src/app/app.ts}';\nexport const procs = app;`,
    'test/helpers/ports.ts': `export const ports = 1;`,
    'test/runtime/fake.ts': `export const fake = 1;`,
    'bench/load/bench.ts': `import { procs } from '@{test/helpers/procs.ts}';\nexport const bench = procs;`,
    'test/api/chats.test.ts': `import { procs } from '@{test/helpers/procs.ts}';\nimport { bench } from '@{bench/load/bench.ts}';\nexport const t = [procs, bench];`,
  };
  /** A module of the service the actor runtime must not import. */
  const CONFIG = 'src/base/config.ts';

  /** `text` with each `@{path}` as the relative specifier from `file` to that path. */
  const relative = (file: string, text: string) =>
    text.replace(/@\{([^}]+)\}/g, (_, to: string) => {
      const spec = path.posix.relative(path.posix.dirname(file), to);
      return spec.startsWith('.') ? spec : `./${spec}`;
    });

  /** Each forbidden kind of import, added alone to the clean tree: the lines to prepend, and the violations expected. */
  const BROKEN: Array<{ what: string; add: Array<[file: string, line: string]>; expect: string[] }> = [
    { what: 'http importing a service module', add: [['src/http/to-http-error.ts', `import { runs } from '@{src/service/runs.ts}';`]], expect: ['layer-http: src/http/to-http-error.ts → src/service/runs.ts'] },
    { what: 'http importing a run kind, type-only', add: [['src/http/outcomes.ts', `import type { chatRun } from '@{actors/chat-run.ts}';`]], expect: ['layer-http: src/http/outcomes.ts → actors/chat-run.ts'] },
    { what: 'the actor runtime importing the service', add: [['actors/runtime/host.ts', `import { config } from '@{src/base/config.ts}';`]], expect: ['layer-runtime: actors/runtime/host.ts → src/base/config.ts'] },
    { what: 'storage importing HTTP, type-only', add: [['src/store/chats.ts', `import type { map } from '@{src/http/to-http-error.ts}';`]], expect: ['layer-domain: src/store/chats.ts → src/http/to-http-error.ts'] },
    { what: 'the simulator importing the service', add: [['src/sim/server.ts', `import { config } from '@{src/base/config.ts}';`]], expect: ['layer-sim: src/sim/server.ts → src/base/config.ts'] },
    {
      what: 'a circle inside one layer',
      add: [['src/db/pool.ts', `import { retry } from '@{src/db/retry.ts}';`], ['src/db/retry.ts', `import { pool } from '@{src/db/pool.ts}';\nexport const retry = pool;`]],
      expect: ['no-circular: src/db/pool.ts → src/db/retry.ts'],
    },
    { what: 'a module outside every layer', add: [['src/new-thing.ts', `import { config } from '@{src/base/config.ts}';`]], expect: ['in-a-layer: src/new-thing.ts → src/base/config.ts'] },
    { what: 'product code importing the harness', add: [['src/service/runs.ts', `import { ports } from '@{test/helpers/ports.ts}';`]], expect: ['service-imports-no-tests: src/service/runs.ts → test/helpers/ports.ts'] },
    { what: 'bench importing a suite’s own file', add: [['bench/load/bench.ts', `import { fake } from '@{test/runtime/fake.ts}';`]], expect: ['bench-imports-only-the-harness: bench/load/bench.ts → test/runtime/fake.ts'] },
    { what: 'the harness importing a suite’s own file', add: [['test/helpers/ports.ts', `import { fake } from '@{test/runtime/fake.ts}';`]], expect: ['harness-imports-no-tests: test/helpers/ports.ts → test/runtime/fake.ts'] },
    // Once the rules hold the runtime to its package's exports (layers by folder), a module it does not export.
    ...(readFileSync(path.join(ROOT, '.dependency-cruiser.cjs'), 'utf8').includes('runtime-through-its-exports')
      ? [{ what: 'http importing a module the runtime does not export', add: [['src/http/sse.ts', `import { internal } from '@{actors/runtime/internal.ts}';`]] as Array<[string, string]>, expect: ['runtime-through-its-exports: src/http/sse.ts → actors/runtime/internal.ts'] }]
      : []),
  ];

  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** The clean tree, plus `extra` lines prepended to their files, in a fresh directory with the project's configs. */
  function tree(extra: ReadonlyArray<readonly [string, string]> = []): string {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'css-layers-'));
    dirs.push(dir);
    const files = new Map(Object.entries(CLEAN));
    for (const [file, line] of extra) files.set(file, `${line}\n${files.get(file) ?? ''}`);
    for (const [file, text] of files) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), relative(file, text));
    }
    for (const config of ['.dependency-cruiser.cjs', 'tsconfig.json', 'package.json', 'actors/runtime/tsconfig.json']) cpSync(path.join(ROOT, config), path.join(dir, config));
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
    return dir;
  }

  function run(cmd: string, args: string[], cwd: string): Promise<{ code: number; out: string }> {
    return new Promise((resolve) => {
      execFile(path.join(BIN, cmd), args, { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, out: stdout + stderr });
      });
    });
  }

  /**
   * `make deps`' dependency-cruiser command on `dir`: its exit code (the number of errors) and each violation
   * of its report as `rule: from → to` (a circle is reported by its first step).
   */
  async function cruise(dir: string): Promise<{ code: number; violations: string[] }> {
    const { code, out } = await run('depcruise', ['--config', '.dependency-cruiser.cjs', 'src', 'actors', 'bench', 'test'], dir);
    const violations = [...out.matchAll(/^\s*error ([\w-]+): (\S+) →\s+(\S+)/gm)].map(([, rule, from, to]) => `${rule}: ${from} → ${to}`);
    return { code, violations: violations.sort() };
  }

  describe('the layer check (make deps)', () => {
    it('passes a tree whose imports all go down', async () => {
      assert.deepEqual(await cruise(tree()), { code: 0, violations: [] });
    });

    // Every forbidden kind in two trees instead of ten (each kind adds to files of its own): the storage
    // import of HTTP goes alone, since together with HTTP's import of the service it would close a circle.
    const groups = [BROKEN.filter((b) => !b.what.startsWith('storage')), BROKEN.filter((b) => b.what.startsWith('storage'))];
    for (const group of groups) {
      it(`fails on ${group.map((b) => b.what).join(', ')}: naming each import`, async () => {
        const { code, violations } = await cruise(tree(group.flatMap((b) => b.add)));
        const expected = group.flatMap((b) => b.expect).sort();
        assert.deepEqual(violations, expected);
        assert.equal(code, expected.length, 'dependency-cruiser exits non-zero, so make test stops');
      });
    }

    it('fails when the actor runtime imports from outside actors/runtime (its own tsconfig)', async () => {
      const { code, out } = await run('tsc', ['-p', 'actors/runtime'], tree([['actors/runtime/mailbox.ts', `import { config } from '@{${CONFIG}}';\nexport const c = config;`]]));
      assert.notEqual(code, 0);
      // The only complaint is the one the rule is for: a file outside the runtime's root.
      const errors = out.split('\n').filter((l) => /error TS\d+/.test(l));
      assert.equal(errors.length, 1, out);
      assert.match(errors[0]!, /error TS6059: File '.*' is not under 'rootDir'/);
      assert.ok(errors[0]!.includes(`/${CONFIG}'`), errors[0]);
    });
  });
});
