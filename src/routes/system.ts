// Health, session, active runs, chat tools and the workspace listing.
import type { AppContext } from '../context.ts';
import type { Route } from '../http/router.ts';
import { listWorkspaceItems } from '../store/workspace.ts';

export function systemRoutes(app: AppContext): Route[] {
  return [
    { method: 'GET', path: '/health', public: true, handler: (_req, reply) => reply.json(200, { ok: true }) },
    {
      method: 'GET',
      path: '/v1/auth/session',
      handler: (_req, reply) => reply.json(200, { authenticated: true, mode: app.config.ADMIN_TOKEN ? 'token' : 'open' }),
    },
    { method: 'GET', path: '/v1/active-runs', handler: (_req, reply) => reply.json(200, app.supervisor.activeRuns()) },
    {
      method: 'GET',
      path: '/v1/chat-tools',
      handler: (_req, reply) => reply.json(200, { tools: app.tools.map(({ name, description }) => ({ name, description })) }),
    },
    {
      method: 'GET',
      path: '/v1/workspace-items',
      handler: async (_req, reply) => reply.json(200, { items: await listWorkspaceItems(app.pool) }),
    },
  ];
}
