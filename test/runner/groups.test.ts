// Which test files share a process (test/groups.mjs, used by test/run.mjs): every file of the suite runs
// exactly once, the longest alone and first, a group holds one directory's files only.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { GROUP_SIZE, SOLO, planProcesses, testName } from '../groups.mjs';

const ROOT = path.resolve(import.meta.dirname, '../..');
const suiteFiles = (readdirSync(path.join(ROOT, 'test'), { recursive: true }) as string[])
  .filter((f) => f.endsWith('.test.ts'))
  .map((f) => `.build/test/${f.replace(/\.ts$/, '.js')}`);

describe('test processes (test/groups.mjs)', () => {
  const plan = planProcesses(suiteFiles);

  it('runs every file of the suite exactly once', () => {
    const ran = plan.flatMap((p) => p.members);
    assert.equal(ran.length, suiteFiles.length);
    assert.deepEqual([...ran].sort(), [...suiteFiles].sort());
  });

  it('starts with each SOLO file alone, in its order', () => {
    assert.deepEqual(
      plan.slice(0, SOLO.length).map((p) => p.members.map(testName)),
      SOLO.map((s) => [s]),
      'every SOLO name is a file of the suite',
    );
  });

  it('groups one directory at most GROUP_SIZE files at a time, evenly, biggest groups first', () => {
    const groups = plan.slice(SOLO.length);
    for (const g of groups) {
      assert.ok(g.members.length <= GROUP_SIZE, g.name);
      assert.equal(new Set(g.members.map((m) => path.dirname(m))).size, 1, `${g.name} holds one directory`);
    }
    const sizes = groups.map((g) => g.members.length);
    assert.deepEqual(sizes, [...sizes].sort((a, b) => b - a));
    // One file over the bound makes two even groups, not a full one and a lone file.
    const n = GROUP_SIZE + 1;
    const files = Array.from({ length: n }, (_, i) => `.build/test/x/f${String(i).padStart(2, '0')}.test.js`);
    const split = planProcesses(files);
    assert.deepEqual(split.map((g) => g.members.length), [Math.ceil(n / 2), Math.floor(n / 2)]);
    assert.deepEqual(split[0]!.members, files.filter((_, i) => i % 2 === 0));
  });
});
