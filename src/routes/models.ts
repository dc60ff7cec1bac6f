// GET /v1/models: each provider's model list as the registry last loaded it (src/models/registry.ts).
import type { AppContext } from '../service/context.ts';
import type { Route } from '../http/router.ts';

export function modelRoutes(app: AppContext): Route[] {
  return [{ method: 'GET', path: '/v1/models', handler: (_req, reply) => reply.json(200, { providers: app.models.snapshot() }) }];
}
