// The lifecycle helper on its own: stop closes last-opened first, once; a failing close does not keep
// the others open; a start that throws half-way closes what it had opened and rethrows its own error.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Lifecycle } from '../../src/app/lifecycle.ts';

/** A lifecycle whose report records each close (and its failure) in order. */
function recorded() {
  const closed: string[] = [];
  const lc = new Lifecycle((name, err) => closed.push(err === undefined ? name : `${name} failed: ${(err as Error).message}`));
  return { lc, closed };
}

describe('Lifecycle', () => {
  it('closes in the reverse order of opening, awaiting each close before the next', async () => {
    const { lc, closed } = recorded();
    const open: string[] = [];
    for (const name of ['database', 'supervisor', 'listener']) {
      await lc.open(name, async () => open.push(name), async () => {
        // Each close sees everything opened before it still open.
        assert.deepEqual(open.at(-1), name);
        open.pop();
      });
    }
    await lc.close();
    assert.deepEqual(closed, ['listener', 'supervisor', 'database']);
    assert.deepEqual(open, []);
  });

  it('closes once: a second close gets the same outcome and closes nothing again', async () => {
    const { lc, closed } = recorded();
    lc.defer('timer', () => {});
    const first = lc.close();
    assert.equal(lc.close(), first);
    await first;
    assert.deepEqual(closed, ['timer']);
  });

  it('a failing close is reported, the ones after it still run, and close rejects with it', async () => {
    const { lc, closed } = recorded();
    lc.defer('database', () => {});
    lc.defer('cluster', async () => {
      throw new Error('redis went away');
    });
    lc.defer('listener', () => {});
    await assert.rejects(lc.close(), /redis went away/);
    assert.deepEqual(closed, ['listener', 'cluster failed: redis went away', 'database']);
  });

  it('a start that throws half-way closes what it had opened, then rethrows the start error', async () => {
    const { lc, closed } = recorded();
    await assert.rejects(
      lc.start(async (l) => {
        l.defer('upstreams', () => {});
        await l.open('database', () => 'pool', () => {});
        await l.open('cluster', () => Promise.reject(new Error('cannot reach redis')), () => closed.push('never opened'));
        l.defer('listener', () => closed.push('never reached'));
      }),
      /cannot reach redis/,
    );
    assert.deepEqual(closed, ['database', 'upstreams']);
  });

  it('a start that fails keeps its own error even when a close fails too', async () => {
    const { lc, closed } = recorded();
    await assert.rejects(
      lc.start(async (l) => {
        l.defer('database', () => Promise.reject(new Error('already gone')));
        throw new Error('migration 007 failed');
      }),
      /migration 007 failed/,
    );
    assert.deepEqual(closed, ['database failed: already gone']);
  });

  it('refuses a resource opened after the stop began, instead of leaking it', async () => {
    const { lc } = recorded();
    await lc.close();
    assert.throws(() => lc.defer('late', () => {}), /late was opened while the server was stopping/);
  });

  it('hands back what a successful start returns, and closes nothing', async () => {
    const { lc, closed } = recorded();
    assert.equal(await lc.start(async (l) => l.open('pool', () => 42, () => {})), 42);
    assert.deepEqual(closed, []);
  });
});
