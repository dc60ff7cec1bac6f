// Runs as one user sees them: another user's run reads as no run at all (the spec's 404s), and the
// active-run lists hold only the caller's own. This process's runs carry their owner; a run on another
// instance is known by its key only, so its owner is the owner of its chat or search row. That row
// is written beside the run's first round, not before it, so a remote run a few milliseconds old can
// have none yet: in open mode (no ADMIN_TOKEN) every run is the one workspace's and none is looked up.
import type { RunInfo } from '../actors/runtime/registry.ts';
import type { AppContext } from './context.ts';
import type { ActiveRunsScope } from './runs.ts';
import { notOthers, ownedIds } from './store/owners.ts';

type ItemKind = 'chat' | 'search';

/** May `owner` attach to, stop or wait for the run of this key? */
export async function mayReach(app: AppContext, kind: ItemKind, key: string, owner: string): Promise<boolean> {
  const here = app.supervisor.findNow(kind, key)?.owner;
  if (here !== undefined) return here === owner;
  return notOthers(app.pool, kind, key, owner);
}

/** The owner's active chat and search runs in the scope (title runs are not listed). */
export async function ownRuns(app: AppContext, scope: ActiveRunsScope, owner: string): Promise<RunInfo[]> {
  const runs = await app.runs.list(scope);
  const open = !app.config.ADMIN_TOKEN;
  const mine: RunInfo[] = [];
  const unknown: RunInfo[] = [];
  for (const r of runs) {
    if (r.key === null || (r.kind !== 'chat' && r.kind !== 'search')) continue;
    if (open) {
      mine.push(r);
      continue;
    }
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
