// GET /v1/usage's rows (usageByDay): one user's LlmCalls summed per UTC day, provider and model.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { finishLlmCall, startLlmCall } from '../../src/store/llm-calls.ts';
import { usageByDay } from '../../src/store/usage.ts';
import { testDatabases } from '../helpers/db.ts';

const MAX_INT = 2_147_483_647;

for (const target of await testDatabases()) {
  describe(`usage by day ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('sums a day past 2^31 tokens (a busy workspace), as numbers', async () => {
      // Each call's counts fit an integer column; their sum for one day and model does not (the daily
      // budget's own sum is a bigint for that reason).
      for (let i = 0; i < 3; i++) {
        const call = await startLlmCall(db.pool, { chatId: null, provider: 'provider_c', model: 'big-day', owner: 'usage-heavy' });
        await finishLlmCall(db.pool, { callId: call, usage: { inputTokens: MAX_INT - 1, outputTokens: 1, totalTokens: MAX_INT }, latencyMs: 5 });
      }
      const rows = await usageByDay(db.pool, 'usage-heavy', 1);
      assert.deepEqual(rows.map(({ day: _, ...r }) => r), [
        { provider: 'provider_c', model: 'big-day', calls: 3, inputTokens: 3 * (MAX_INT - 1), outputTokens: 3, totalTokens: 3 * MAX_INT },
      ]);
      assert.match(rows[0]!.day, /^\d{4}-\d\d-\d\d$/);
    });
  });
}
