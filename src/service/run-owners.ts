// Runs as one user sees them: another user's run reads as no run at all (the spec's 404s), and the
// active-run lists hold only the caller's own. This process's runs carry their owner, and so do the
// cluster's where their instance wrote it beside the lease (src/cluster/leases.ts), for attach and
// stop as for the lists. Only a run whose instance did not (an earlier version's, or one whose lease
// Redis lost and no beat has written again) is known by its key alone: its owner is then the owner of
// its chat or search row, which is written beside the run's first round, so such a run a few
// milliseconds old is not listed yet. (Open mode is no exception: its runs are the built-in admin's,
// and their leases say so.)
import type { RunInfo } from '../../actors/runtime/registry.ts';
import type { AppContext } from './context.ts';
import type { ActiveRunsScope } from './runs.ts';
import { notOthers, ownedIds } from '../store/owners.ts';

type ItemKind = 'chat' | 'search';

/** May `owner` attach to, stop or wait for the run of this key? */
export async function mayReach(app: AppContext, kind: ItemKind, key: string, owner: string): Promise<boolean> {
  const known = app.supervisor.findNow(kind, key)?.owner ?? (await app.runs.remoteUser(kind, key));
  if (known !== undefined) return known === owner;
  return notOthers(app.pool, kind, key, owner);
}

/**
 * A chat or search was deleted: its run, here or on another instance, ends now with `message` as its
 * error. The deletion stands whatever happens here, so a failure to reach the run (Redis down) is only
 * logged: that run then goes on to its end, storing nothing (its row is gone).
 */
export async function endRunOfDeleted(app: AppContext, kind: ItemKind, key: string, message: string): Promise<void> {
  await app.runs.cancel(kind, key, message).catch((err: unknown) => app.log.warn({ err, kind, key }, 'the run of a deleted item was not reached'));
}

/** The owner's active chat and search runs in the scope (title runs are not listed). */
export async function ownRuns(app: AppContext, scope: ActiveRunsScope, owner: string): Promise<RunInfo[]> {
  const runs = await app.runs.list(scope);
  const mine: RunInfo[] = [];
  const unknown: RunInfo[] = [];
  for (const r of runs) {
    if (r.key === null || (r.kind !== 'chat' && r.kind !== 'search')) continue;
    const known = r.owner ?? app.supervisor.findNow(r.kind, r.key)?.owner;
    if (known === undefined) unknown.push(r);
    else if (known === owner) mine.push(r);
  }
  if (unknown.length === 0) return mine;
  const keys = (kind: ItemKind) => unknown.filter((r) => r.kind === kind).map((r) => r.key!);
  const owned = await ownedIds(app.pool, owner, keys('chat'), keys('search'));
  for (const r of unknown) if ((r.kind === 'chat' ? owned.chats : owned.searches).has(r.key!)) mine.push(r);
  return mine;
}
