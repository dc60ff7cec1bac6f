// Search runs, whole and streamed, re-attaching to a running search, and the search-to-chat hand-off.
// One run per search: a second run or run/stream for a search that is running joins the running one
// (spec: "attaches to the existing stream; no second run starts"), so the engine is asked once. The
// registry decides start-or-join in one call, so two requests arriving together never both start.
import type { SearchRunRequest } from '../../actors/search-run.ts';
import type { AppContext } from '../service/context.ts';
import { engineAEndpointFromConfig } from '../engines/engine-a.ts';
import { readJson } from '../http/body.ts';
import { badRequest, notFound, SEARCH_ENGINE_MISSING, ACTIVE_SEARCH_STREAM_NOT_FOUND, SEARCH_NOT_FOUND } from '../http/errors.ts';
import { outcomeError } from '../http/outcomes.ts';
import { mayReach } from '../service/run-owners.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import type { SseSink } from '../http/sse.ts';
import { searchChatSchema, searchRunSchema } from '../domain/schemas.ts';
import { defaultSearchChatTitle, searchSeedMessage } from '../search/seed.ts';
import { createChat } from '../store/chats.ts';
import { getSearch, getSearchDetail } from '../store/searches.ts';

const NO_QUERY = 'this search has no query: send `query` in the run body';

export function searchRunRoutes(app: AppContext): Route[] {
  const { runs, pool } = app;

  /**
   * The validated run request for a search that exists. `query` is empty when neither the body nor
   * the search has one: such a request may still join the search's running run (whose body had one),
   * so "no query" is decided by the registry, when it finds no run to join (`ifIdle`).
   */
  async function runRequest(req: Req, searchId: string): Promise<SearchRunRequest> {
    const body = await readJson(req, searchRunSchema);
    const search = await getSearch(pool, searchId, req.caller.userId);
    if (!search) throw notFound(SEARCH_NOT_FOUND);
    const query = body.query ?? search.query?.trim() ?? '';
    // Search runs always use engine_a, whatever CHAT_WEB_SEARCH_ENGINE says.
    const endpoint = engineAEndpointFromConfig(app.config);
    if ('missing' in endpoint) throw query ? SEARCH_ENGINE_MISSING(endpoint.missing.join(' and ')) : badRequest(NO_QUERY);
    return {
      searchId,
      owner: req.caller.userId,
      endpoint,
      query,
      title: body.title,
      type: body.type,
      numResults: body.numResults,
      includeDomains: body.includeDomains,
      excludeDomains: body.excludeDomains,
    };
  }

  /** Starts the search's run, or joins the one that is running. */
  async function startOrJoin(req: Req, sink?: SseSink) {
    const searchId = req.params.searchId!;
    const request = await runRequest(req, searchId);
    const ifIdle = request.query ? undefined : { ok: false as const, outcome: 'invalid' as const, message: NO_QUERY };
    const started = await runs.start({ kind: 'search', key: searchId, request, ifRunning: 'join', ifIdle, subscriber: sink, label: 'engine_a', ...app.limits.runOptions(req.caller) });
    if (!started.ok) throw outcomeError(started);
    return started.handle;
  }

  async function runWhole(req: Req, reply: Reply) {
    const result = await (await startOrJoin(req)).result;
    if (!result.ok) throw outcomeError(result);
    reply.json(200, { search: result.value.search });
  }

  async function runStream(req: Req, reply: Reply) {
    const sink = app.sse.create(reply);
    await startOrJoin(req, sink);
    sink.open();
  }

  async function attach(req: Req, reply: Reply) {
    const searchId = req.params.searchId!;
    if (!(await mayReach(app, 'search', searchId, req.caller.userId))) throw notFound(ACTIVE_SEARCH_STREAM_NOT_FOUND);
    const sink = app.sse.create(reply);
    if ((await runs.attach('search', searchId, sink)) === 'not_found') throw notFound(ACTIVE_SEARCH_STREAM_NOT_FOUND);
    sink.open();
  }

  async function stop(req: Req, reply: Reply) {
    const searchId = req.params.searchId!;
    if (!(await mayReach(app, 'search', searchId, req.caller.userId)) || !(await runs.stop('search', searchId))) throw notFound(ACTIVE_SEARCH_STREAM_NOT_FOUND);
    app.metrics.runsStopped.inc({ kind: 'search' });
    reply.json(200, { stopped: true });
  }

  async function toChat(req: Req, reply: Reply) {
    const body = await readJson(req, searchChatSchema);
    const search = await getSearchDetail(pool, req.params.searchId!, req.caller.userId);
    if (!search) throw notFound(SEARCH_NOT_FOUND);
    const chat = await createChat(pool, {
      title: body.title ?? defaultSearchChatTitle(search),
      enabledTools: app.tools.map((t) => t.name),
      messages: [searchSeedMessage(search)],
      owner: req.caller.userId,
    });
    reply.json(200, { chat });
  }

  /** A run request that joins none (none going here, and no other instance to hold one) may be refused before its body is read. */
  const startsRun = (req: Req) => runs.wouldStart('search', req.params.searchId!);

  return [
    { method: 'POST', path: '/v1/searches/:searchId/run', handler: runWhole, startsRun },
    { method: 'POST', path: '/v1/searches/:searchId/run/stream', handler: runStream, startsRun },
    { method: 'POST', path: '/v1/searches/:searchId/run/stream/attach', handler: attach },
    { method: 'POST', path: '/v1/searches/:searchId/run/stop', handler: stop },
    { method: 'POST', path: '/v1/searches/:searchId/chat', handler: toChat },
  ];
}
