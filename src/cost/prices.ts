// What a model call costs in US dollars: the price table (MODEL_PRICES, in the keys of LiteLLM's
// model_prices_and_context_window.json, so that file or an excerpt of it serves as is) and the cost
// of one call's usage under it. Cached input is priced apart: a cache read costs a fraction of a fresh
// input token at most providers, a cache write (provider_b) a little more.
import { readFileSync } from 'node:fs';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

/** One model's prices, USD per token, as LiteLLM names them. Other keys of a LiteLLM entry are ignored. */
export interface ModelPrice {
  input_cost_per_token: number;
  output_cost_per_token: number;
  cache_read_input_token_cost?: number;
  cache_creation_input_token_cost?: number;
}

/** Prices by model id as the provider names it; a model not in it has no price (cost null). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

/** The token counts a price applies to (src/providers/types.ts Usage has this shape). */
export interface PricedUsage {
  /** All input tokens, cached ones included. */
  inputTokens: number;
  outputTokens: number;
  /** Input read from the provider's prompt cache. */
  cacheReadTokens?: number;
  /** Input written to the provider's prompt cache (provider_b). */
  cacheWriteTokens?: number;
}

/** A MODEL_PRICES file that cannot be used: a configuration error, so it carries the configuration's code. */
export class PriceTableError extends ServiceError {
  constructor(message: string) {
    super(ErrorCodes.CONFIG, message);
    this.name = 'PriceTableError';
  }
}

const PRICE_KEYS = ['input_cost_per_token', 'output_cost_per_token', 'cache_read_input_token_cost', 'cache_creation_input_token_cost'] as const;

/** The default table: the simulator's models, free (so a budget in USD never refuses them). */
export const BUNDLED_PRICES = new URL('./sim-prices.json', import.meta.url);

/**
 * The table of the JSON file at `path` (the bundled one when unset). Throws PriceTableError saying
 * what is wrong: an unreadable file, bad JSON, a price that is not a non-negative number. An entry
 * without both the input and the output price is left out: its model has no price (LiteLLM's file
 * holds image and audio models priced otherwise, and its `sample_spec` entry documents the keys).
 */
export function readPriceTable(path?: string): PriceTable {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path ?? BUNDLED_PRICES, 'utf8'));
  } catch (err) {
    throw new PriceTableError(`cannot read the price table ${path ?? BUNDLED_PRICES.pathname}: ${(err as Error).message}`);
  }
  if (!isRecord(raw)) throw new PriceTableError('the price table must be a JSON object of models');
  const table: Record<string, ModelPrice> = {};
  for (const [model, entry] of Object.entries(raw)) {
    if (model === 'sample_spec' || !isRecord(entry)) continue;
    for (const key of PRICE_KEYS) {
      const v = entry[key];
      if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) {
        throw new PriceTableError(`${model}.${key} must be a non-negative number of USD per token (got ${JSON.stringify(v)})`);
      }
    }
    if (entry.input_cost_per_token === undefined || entry.output_cost_per_token === undefined) continue;
    const price: ModelPrice = { input_cost_per_token: entry.input_cost_per_token as number, output_cost_per_token: entry.output_cost_per_token as number };
    if (entry.cache_read_input_token_cost !== undefined) price.cache_read_input_token_cost = entry.cache_read_input_token_cost as number;
    if (entry.cache_creation_input_token_cost !== undefined) price.cache_creation_input_token_cost = entry.cache_creation_input_token_cost as number;
    table[model] = price;
  }
  return table;
}

/**
 * USD for `usage` of `model`; null when the model has no price or there is no usage. A cached token
 * without its own price costs what a fresh one does (LiteLLM's rule).
 */
export function costOf(prices: PriceTable, model: string, usage: PricedUsage | null): number | null {
  if (!usage) return null;
  const p = Object.hasOwn(prices, model) ? prices[model]! : undefined;
  if (!p) return null;
  const read = usage.cacheReadTokens ?? 0;
  const write = usage.cacheWriteTokens ?? 0;
  const fresh = Math.max(0, usage.inputTokens - read - write);
  return (
    fresh * p.input_cost_per_token +
    read * (p.cache_read_input_token_cost ?? p.input_cost_per_token) +
    write * (p.cache_creation_input_token_cost ?? p.input_cost_per_token) +
    usage.outputTokens * p.output_cost_per_token
  );
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
