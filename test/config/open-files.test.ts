// The start's warning when MAX_ACTIVE_RUNS streams (two sockets each) cannot fit the open-files limit.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPEN_FILES_RESERVE, openFilesLimit, openFilesWarning } from '../../src/base/open-files.ts';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
`;

describe('open-files limit', () => {
  it('reads the soft limit from /proc/self/limits', () => {
    assert.equal(openFilesLimit(() => LIMITS), 20000);
    assert.equal(openFilesLimit(() => LIMITS.replace('20000                20000', 'unlimited            unlimited')), Number.POSITIVE_INFINITY);
    assert.equal(openFilesLimit(() => 'nothing useful'), null);
    assert.equal(
      openFilesLimit(() => {
        throw new Error('ENOENT');
      }),
      null,
    );
  });

  it('reads this process’s real limit on Linux', () => {
    const limit = openFilesLimit();
    if (process.platform === 'linux') assert.ok(limit !== null && limit > 0, `got ${limit}`);
    else assert.equal(limit, null);
  });

  it('warns with the numbers and the fix when the streams cannot fit', () => {
    const warning = openFilesWarning(20000, 20000);
    assert.ok(warning);
    assert.match(warning, /MAX_ACTIVE_RUNS=20000 needs about 40256 open files/);
    assert.match(warning, /may open 20000/);
    assert.match(warning, new RegExp(`streams past about ${(20000 - OPEN_FILES_RESERVE) / 2} will fail`));
    assert.match(warning, /ulimit -n, systemd LimitNOFILE=/);
  });

  it('says nothing when they fit, or when the limit is unknown', () => {
    assert.equal(openFilesWarning(65536, 20000), null);
    assert.equal(openFilesWarning(2 * 500 + OPEN_FILES_RESERVE, 500), null);
    assert.equal(openFilesWarning(2 * 500 + OPEN_FILES_RESERVE - 1, 500)?.startsWith('MAX_ACTIVE_RUNS=500'), true);
    assert.equal(openFilesWarning(Number.POSITIVE_INFINITY, 20000), null);
    assert.equal(openFilesWarning(null, 20000), null);
  });
});
