// What a retry of an Idempotency-Key waits on (src/service/claimed-keys.ts): its wait ends when its client
// goes, and a wait that polls for long leaves nothing behind on the client's signal between polls.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import { ClaimedKeys } from '../../src/service/claimed-keys.ts';

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

// A deadline: a wait that missed its abort would otherwise hold the file for good.
describe('ClaimedKeys.nextChange', { timeout: 10_000 }, () => {
  it('polls a key run elsewhere without piling listeners on the signal, and stops at once when it aborts', async () => {
    const keys = new ClaimedKeys();
    const gone = new AbortController();
    for (let i = 0; i < 5; i++) {
      const poll = keys.nextChange('elsewhere', gone.signal);
      assert.equal(listeners(gone.signal), 1, 'one listener while a poll waits');
      await poll;
      assert.equal(listeners(gone.signal), 0, 'none once it is over');
    }
    const last = keys.nextChange('elsewhere', gone.signal);
    gone.abort();
    await assert.rejects(last, { name: 'AbortError' });
    assert.equal(listeners(gone.signal), 0);
  });

  it('waits for the events of a key run here, and stops when its signal aborts', async () => {
    const keys = new ClaimedKeys();
    keys.watch('here');
    const left = new AbortController();
    const waiting = keys.nextChange('here', left.signal);
    left.abort();
    await assert.rejects(waiting, { name: 'AbortError' });
    assert.equal(listeners(left.signal), 0);
    await assert.rejects(keys.nextChange('here', left.signal), { name: 'AbortError' }, 'an aborted signal does not wait');

    const stays = new AbortController();
    const start = keys.nextChange('here', stays.signal);
    keys.started('here');
    await start;
    const record = keys.nextChange('here', stays.signal);
    keys.unwatch('here');
    await record;
    assert.equal(listeners(stays.signal), 0, 'nothing left on the signal of a wait that ended by its event');
  });
});
