// A suite's database for the tests of dead instances: opened once, and before each test no call is
// left running and no instance row remains, so each test's sweep sees only what it made.
import { after, before, beforeEach } from 'node:test';
import type { Database } from '../../src/db/types.ts';
import { markInterruptedLlmCalls } from '../../src/store/llm-calls.ts';
import type { TestDatabase } from './db.ts';

/** Registers the suite's hooks; `use` receives the database once it is open. */
export function sweptDatabase(target: TestDatabase, use: (db: Database) => void): void {
  let db: Database | undefined;
  before(async () => {
    db = await target.open();
    use(db);
  });
  after(() => db?.close());
  beforeEach(async () => {
    await markInterruptedLlmCalls(db!.pool);
    await db!.pool.query('DELETE FROM instances');
  });
}
