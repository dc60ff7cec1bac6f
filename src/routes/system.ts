// Health (liveness), readiness, session, active runs, chat tools and the workspace listing.
import type { RunInfo } from '../../actors/runtime/registry.ts';
import type { AppContext } from '../service/context.ts';
import { badRequest } from '../http/errors.ts';
import type { Route } from '../http/router.ts';
import { ownRuns } from '../service/run-owners.ts';
import type { ActiveRunsScope } from '../service/runs.ts';
import { searchHistory } from '../store/history-search.ts';
import { getUser } from '../store/users.ts';
import { listWorkspaceItems } from '../store/workspace.ts';
import { historyQuery } from './history-search.ts';

function activeRunsScope(scope: string | null): ActiveRunsScope {
  if (scope === null || scope === 'process') return 'process';
  if (scope === 'cluster') return 'cluster';
  throw badRequest('scope must be `process` or `cluster`');
}

/** The spec's shape of GET /v1/active-runs: chat streams and search runs (title runs are not listed). */
export function activeRuns(runs: RunInfo[]): { chats: string[]; searches: string[] } {
  const chats: string[] = [];
  const searches: string[] = [];
  for (const r of runs) {
    if (r.key === null) continue;
    if (r.kind === 'chat') chats.push(r.key);
    else if (r.kind === 'search') searches.push(r.key);
  }
  return { chats, searches };
}

export function systemRoutes(app: AppContext): Route[] {
  return [
    { method: 'GET', path: '/health', public: true, handler: (_req, reply) => reply.json(200, { ok: true }) },
    {
      method: 'GET',
      path: '/ready',
      public: true,
      handler: async (_req, reply) => {
        const r = await app.readiness.run();
        if (r.ready) reply.json(200, { ready: true });
        else reply.json(503, { message: r.message });
      },
    },
    {
      method: 'GET',
      path: '/v1/auth/session',
      handler: async (req, reply) => {
        if (!app.config.ADMIN_TOKEN) return reply.json(200, { authenticated: true, mode: 'open' });
        const { userId, admin } = req.caller;
        // A user deleted since this request was authenticated reads as their id.
        const name = admin ? 'admin' : ((await getUser(app.pool, userId))?.name ?? userId);
        reply.json(200, { authenticated: true, mode: 'token', user: { id: userId, name, admin } });
      },
    },
    {
      method: 'GET',
      path: '/v1/active-runs',
      // The spec's meaning is this process; `?scope=cluster` lists every live instance's runs.
      handler: async (req, reply) => reply.json(200, activeRuns(await ownRuns(app, activeRunsScope(req.query.get('scope')), req.caller.userId))),
    },
    {
      method: 'GET',
      path: '/v1/chat-tools',
      handler: (_req, reply) => reply.json(200, { tools: app.tools.map(({ name, description }) => ({ name, description })) }),
    },
    {
      method: 'GET',
      path: '/v1/workspace-items',
      handler: async (req, reply) => {
        const search = historyQuery(req.query);
        const owner = req.caller.userId;
        const items = search
          ? await searchHistory(app.pool, search.q, search.limit, owner)
          : await listWorkspaceItems(app.pool, owner);
        reply.json(200, { items });
      },
    },
  ];
}
