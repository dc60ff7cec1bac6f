// The price table (MODEL_PRICES) in LiteLLM's keys, and the cost of a call's usage under it: cached
// input priced apart from fresh input.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/base/config.ts';
import { costOf, readPriceTable } from '../../src/cost/prices.ts';

function tableFile(content: unknown): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'prices-')), 'prices.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

// Anthropic's published prices of one model, per token: a cache read is a tenth of fresh input, a write 1.25×.
const SONNET = { input_cost_per_token: 3e-6, output_cost_per_token: 15e-6, cache_read_input_token_cost: 3e-7, cache_creation_input_token_cost: 3.75e-6 };

describe('the price table', () => {
  it('prices fresh input, cache reads, cache writes and output each at its own rate', () => {
    const prices = { sonnet: SONNET };
    const usage = { inputTokens: 1000, outputTokens: 100, totalTokens: 1100, cacheReadTokens: 600, cacheWriteTokens: 300 };
    const expected = 100 * 3e-6 + 600 * 3e-7 + 300 * 3.75e-6 + 100 * 15e-6;
    assert.ok(Math.abs(costOf(prices, 'sonnet', usage)! - expected) < 1e-12);
    // The same tokens all fresh cost more: the cache is what the service saves.
    assert.ok(costOf(prices, 'sonnet', { inputTokens: 1000, outputTokens: 100 })! > expected);
  });

  it('prices a cached token as fresh input when the model has no cache price (LiteLLM)', () => {
    const prices = { plain: { input_cost_per_token: 1e-6, output_cost_per_token: 2e-6 } };
    assert.equal(costOf(prices, 'plain', { inputTokens: 10, outputTokens: 5, cacheReadTokens: 4 }), 10 * 1e-6 + 5 * 2e-6);
  });

  it('has no cost for a model without a price or a call without usage', () => {
    assert.equal(costOf({ sonnet: SONNET }, 'other', { inputTokens: 1, outputTokens: 1 }), null);
    assert.equal(costOf({ sonnet: SONNET }, 'sonnet', null), null);
    // An inherited property is no model.
    assert.equal(costOf({}, 'constructor', { inputTokens: 1, outputTokens: 1 }), null);
  });

  it("reads an excerpt of LiteLLM's file as is: other keys ignored, entries without token prices left out", () => {
    const table = readPriceTable(
      tableFile({
        sample_spec: { input_cost_per_token: 0, output_cost_per_token: 0, litellm_provider: 'one of https://docs.litellm.ai/docs/providers' },
        'claude-sonnet-4-5': { ...SONNET, max_tokens: 64000, litellm_provider: 'anthropic', mode: 'chat', supports_prompt_caching: true },
        'dall-e-3': { output_cost_per_image: 0.04, litellm_provider: 'openai', mode: 'image_generation' },
      }),
    );
    assert.deepEqual(table, { 'claude-sonnet-4-5': SONNET });
  });

  it('the bundled default prices the simulator models at zero', () => {
    const table = readPriceTable();
    for (const model of ['sim-a-mini', 'sim-b-large', 'sim-c-small', 'sim-d-agent', 'gpt-4.1-nano']) {
      assert.equal(costOf(table, model, { inputTokens: 100, outputTokens: 100, cacheReadTokens: 50 }), 0, model);
    }
  });

  it('a bad table stops the start with a message naming MODEL_PRICES', () => {
    assert.throws(() => loadConfig({ MODEL_PRICES: '/nonexistent/prices.json' }), /MODEL_PRICES: cannot read the price table \/nonexistent\/prices\.json/);
    assert.throws(() => loadConfig({ MODEL_PRICES: tableFile('{not json') }), /MODEL_PRICES: cannot read the price table/);
    assert.throws(
      () => loadConfig({ MODEL_PRICES: tableFile({ m: { input_cost_per_token: '3e-6', output_cost_per_token: 1 } }) }),
      /MODEL_PRICES: m\.input_cost_per_token must be a non-negative number of USD per token \(got "3e-6"\)/,
    );
    assert.throws(() => loadConfig({ USER_COST_PER_DAY: '-1' }), /USER_COST_PER_DAY: must be a positive number of USD/);
    assert.equal(loadConfig({ USER_COST_PER_DAY: '2.5' }).USER_COST_PER_DAY, 2.5);
  });
});
