// Searches: list, create (with reuse by query and the cache window), get, delete, star.
import type { AppContext } from '../service/context.ts';
import { readJson } from '../http/body.ts';
import { notFound, SEARCH_NOT_FOUND } from '../http/errors.ts';
import { SEARCH_DELETED } from '../base/messages.ts';
import { endRunOfDeleted } from '../service/run-owners.ts';
import type { Route } from '../http/router.ts';
import { createSearchSchema, starSchema } from '../domain/schemas.ts';
import { starSearch } from '../store/stars.ts';
import {
  createSearch,
  deleteSearch,
  reuseOrCreateSearch,
  getSearchDetail,
  listSearches,
} from '../store/searches.ts';

export const SEARCH_CACHE_WINDOW_MS = 24 * 60 * 60 * 1000;


export function searchRoutes(app: AppContext): Route[] {
  const { pool } = app;
  return [
    {
      method: 'GET',
      path: '/v1/searches',
      handler: async (req, reply) => reply.json(200, { searches: await listSearches(pool, { owner: req.caller.userId }) }),
    },
    {
      method: 'POST',
      path: '/v1/searches',
      handler: async (req, reply) => {
        const body = await readJson(req, createSearchSchema);
        const query = body.query?.trim() || undefined;
        const title = body.title?.trim() || undefined;
        if (body.reuseByQuery && query) {
          const { search, hasStoredResults, reused } = await reuseOrCreateSearch(pool, { title, query, owner: req.caller.userId });
          if (!reused) return reply.json(200, { search, reused: false, cacheHit: false });
          const fresh = app.clock.now() - Date.parse(search.updatedAt) <= SEARCH_CACHE_WINDOW_MS;
          const streaming = (await app.runs.find('search', search.id)) !== null;
          return reply.json(200, { search, reused: true, cacheHit: hasStoredResults && fresh && !streaming });
        }
        const search = await createSearch(pool, { title, query, owner: req.caller.userId });
        reply.json(200, { search, reused: false, cacheHit: false });
      },
    },
    {
      method: 'GET',
      path: '/v1/searches/:searchId',
      handler: async (req, reply) => {
        const search = await getSearchDetail(pool, req.params.searchId!, req.caller.userId);
        if (!search) throw notFound(SEARCH_NOT_FOUND);
        reply.json(200, { search });
      },
    },
    {
      method: 'DELETE',
      path: '/v1/searches/:searchId',
      handler: async (req, reply) => {
        const id = req.params.searchId!;
        if (!(await deleteSearch(pool, id, req.caller.userId))) throw notFound(SEARCH_NOT_FOUND);
        await endRunOfDeleted(app, 'search', id, SEARCH_DELETED);
        reply.json(200, { deleted: true });
      },
    },
    {
      method: 'PATCH',
      path: '/v1/searches/:searchId/star',
      handler: async (req, reply) => {
        const { starred } = await readJson(req, starSchema);
        const id = req.params.searchId!;
        const search = await starSearch(pool, id, starred, req.caller.userId);
        if (!search) throw notFound(SEARCH_NOT_FOUND);
        reply.json(200, { search });
      },
    },
  ];
}
