// Placeholder until the search run lands (issue 7): ends every search run with a clear error.
import type { RunDeps } from '../src/run-deps.ts';
import type { RunContext } from './actor.ts';

export async function searchRun(ctx: RunContext, _req: unknown, _deps: RunDeps): Promise<void> {
  const message = 'search runs are not implemented yet';
  ctx.finish('error', { message }, { ok: false, status: 501, message });
}
