// Request bodies of the user endpoints (docs/operations.md, "Users and single sign-on"), as zod schemas: each problem is
// reported under the field's own name.
import { z } from 'zod';

const name = z.string({ error: 'must be a string' }).trim().min(1, 'must not be blank').max(100, 'must be at most 100 characters');
// The columns are Postgres integers: a larger limit is this 400, not the database's out-of-range error.
const MAX_LIMIT = 2_147_483_647;
const limit = z
  .number({ error: 'must be an integer ≥ 1 or null' })
  .int('must be an integer ≥ 1 or null')
  .min(1, 'must be an integer ≥ 1 or null')
  .max(MAX_LIMIT, `must be at most ${MAX_LIMIT}`)
  .nullable();

// USD: a fraction of a dollar is a budget too.
const usd = z
  .number({ error: 'must be a number of USD > 0 or null' })
  .positive('must be a number of USD > 0 or null')
  .max(1e12, 'must be at most 1e12 USD')
  .nullable();

export const createUserSchema = z.object({ name, maxActiveRuns: limit.optional(), tokensPerDay: limit.optional(), costPerDay: usd.optional() });
export const patchUserSchema = z.object({
  name: name.optional(),
  maxActiveRuns: limit.optional(),
  tokensPerDay: limit.optional(),
  costPerDay: usd.optional(),
  disabled: z.boolean({ error: 'must be a boolean' }).optional(),
});
