// GET /v1/usage's rows (usageByDay): one user's LlmCalls summed per UTC day, provider and model.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { failLlmCall, finishLlmCall, startLlmCall } from '../../src/store/llm-calls.ts';
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
        { provider: 'provider_c', model: 'big-day', calls: 3, inputTokens: 3 * (MAX_INT - 1), outputTokens: 3, totalTokens: 3 * MAX_INT, cachedInputTokens: 0, cost: null },
      ]);
      assert.match(rows[0]!.day, /^\d{4}-\d\d-\d\d$/);
    });
  });
}

for (const target of await testDatabases()) {
  describe(`usage: cached input and cost ${target.tag}`, () => {
    let db: Database;
    before(async () => {
      db = await target.open();
    });
    after(async () => {
      await db?.close();
    });

    it('sums cache reads and writes apart from fresh input, and the cost of the calls', async () => {
      const owner = 'usage-cached';
      const a = await startLlmCall(db.pool, { chatId: null, provider: 'provider_b', model: 'priced', owner });
      await finishLlmCall(db.pool, { callId: a, usage: { inputTokens: 100, outputTokens: 10, totalTokens: 110, cacheReadTokens: 60, cacheWriteTokens: 30 }, cost: 0.25, latencyMs: 5 });
      const b = await startLlmCall(db.pool, { chatId: null, provider: 'provider_b', model: 'priced', owner });
      await finishLlmCall(db.pool, { callId: b, usage: { inputTokens: 50, outputTokens: 5, totalTokens: 55, cacheReadTokens: 40 }, cost: 0.5, latencyMs: 5 });
      // A call that ended without usage (a failure before any round) costs nothing and hides nothing.
      const c = await startLlmCall(db.pool, { chatId: null, provider: 'provider_b', model: 'priced', owner });
      await failLlmCall(db.pool, { callId: c, error: 'boom', latencyMs: 1 });
      const d = await startLlmCall(db.pool, { chatId: null, provider: 'provider_c', model: 'unpriced', owner });
      await finishLlmCall(db.pool, { callId: d, usage: { inputTokens: 7, outputTokens: 3, totalTokens: 10 }, cost: null, latencyMs: 5 });
      const rows = await usageByDay(db.pool, owner, 1);
      assert.deepEqual(rows.map(({ day: _, ...r }) => r), [
        { provider: 'provider_b', model: 'priced', calls: 3, inputTokens: 150, outputTokens: 15, totalTokens: 165, cachedInputTokens: 130, cost: 0.75 },
        { provider: 'provider_c', model: 'unpriced', calls: 1, inputTokens: 7, outputTokens: 3, totalTokens: 10, cachedInputTokens: 0, cost: null },
      ]);
      const day = await db.pool.query<{ total_tokens: string; cost: number }>('SELECT total_tokens, cost FROM user_day_tokens WHERE owner_id = $1', [owner]);
      assert.deepEqual([Number(day.rows[0]!.total_tokens), day.rows[0]!.cost], [175, 0.75], "the day's tokens and cost");
    });
  });
}
