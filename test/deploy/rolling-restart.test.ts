// A rolling restart behind nginx with live streams (issue 24): two instances of the real entry point
// on one Postgres, clients keeping 20 streams going through deploy/nginx.conf; each instance in turn
// gets SIGTERM, drains, exits 0 and comes back. Every stream ends with `done` and its whole text
// stored once: 0 cut, 0 lost, 0 doubled. A start refused by the draining instance (503) is retried
// on the other one by nginx (proxy_next_upstream), so no client sees it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createScratchPostgres } from '../helpers/db.ts';
import { judgeRolling, rollingRestart } from '../helpers/rolling.ts';

describe('rolling restart behind nginx', () => {
  const skip = process.env.TEST_DATABASE_URL ? false : 'needs TEST_DATABASE_URL: both instances share one Postgres';
  it('ends every stream with done and its full text stored once', { skip }, async (t) => {
    const scratch = await createScratchPostgres();
    try {
      const result = await rollingRestart({
        env: { DATABASE_URL: scratch.url, ACTOR_THREADS: '1', SHUTDOWN_GRACE_MS: '600000' },
        live: 20,
        deltas: 60,
        rate: 20,
        log: (line) => t.diagnostic(line),
      });
      if (!result) return t.skip('nginx is not installed and could not be');
      const { streams, exitCodes, activeAtSigterm } = result;
      t.diagnostic(`${streams.length} streams; live at each SIGTERM: ${activeAtSigterm.join(', ')}`);
      assert.deepEqual(exitCodes, [0, 0], 'each drained instance exits 0');
      assert.ok(activeAtSigterm.every((n) => n > 0), 'each instance had live streams when it was told to stop');
      const verdict = await judgeRolling(result, scratch.url);
      assert.deepEqual(verdict, { streams: streams.length, refused: 0, cut: 0, lost: 0, doubled: 0 }, JSON.stringify(streams.filter((s) => s.end?.event !== 'done').slice(0, 3)));
    } finally {
      await scratch.drop();
    }
  });
});
