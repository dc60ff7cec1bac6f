// Search runs, whole and streamed, re-attaching to a running search, and the search-to-chat hand-off.
// One run per search: a second run or run/stream for a search that is running joins the running one
// (spec: "attaches to the existing stream; no second run starts"), so the engine is asked once.
// The final find-or-reserve-and-launch happens in one synchronous block, after every await, so two
// requests arriving together can never both start a run, and a found run is always launched.
import { engineAOrMessage, type SearchRunRequest, type SearchRunValue } from '../../actors/search-run.ts';
import type { RunEntry } from '../../actors/supervisor.ts';
import type { AppContext } from '../context.ts';
import { readJson } from '../http/body.ts';
import { badRequest, HttpError, notFound, ACTIVE_SEARCH_STREAM_NOT_FOUND, SEARCH_NOT_FOUND } from '../http/errors.ts';
import type { Reply, Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { openSse, type SseSink } from '../http/sse.ts';
import { searchChatSchema, searchRunSchema } from '../schemas.ts';
import { defaultSearchChatTitle, searchSeedMessage } from '../search/seed.ts';
import { createChat } from '../store/chats.ts';
import { getSearch, getSearchDetail } from '../store/searches.ts';


export function searchRunRoutes(app: AppContext): Route[] {
  const { supervisor, pool } = app;

  /** The validated run request for a search that exists and has something to search for. */
  async function runRequest(req: Req, searchId: string): Promise<SearchRunRequest> {
    const body = await readJson(req, searchRunSchema);
    const search = await getSearch(pool, searchId);
    if (!search) throw notFound(SEARCH_NOT_FOUND);
    const query = body.query ?? search.query?.trim();
    if (!query) throw badRequest('this search has no query: send `query` in the run body');
    const engine = engineAOrMessage(app.config);
    if ('message' in engine) throw new HttpError(503, engine.message);
    return {
      searchId,
      query,
      title: body.title,
      type: body.type,
      numResults: body.numResults,
      includeDomains: body.includeDomains,
      excludeDomains: body.excludeDomains,
    };
  }

  /** The running entry for the search, or a new one launched now (synchronously). */
  function joinOrLaunch(searchId: string, request: SearchRunRequest, sink?: SseSink): RunEntry {
    const running = supervisor.find('search', searchId);
    if (running) {
      if (sink) supervisor.attach(running, sink);
      return running;
    }
    const entry = supervisor.reserve('search', searchId);
    supervisor.launch(entry, request, sink, 'engine_a');
    return entry;
  }

  const openStream = (reply: Reply): SseSink => openSse(reply, app.config.SSE_MAX_QUEUED_BYTES);

  async function runWhole(req: Req, reply: Reply) {
    const searchId = req.params.searchId!;
    const running = supervisor.find('search', searchId);
    // Joining a running search needs no validation of a body that would not be used.
    const entry = running ?? joinOrLaunch(searchId, await runRequest(req, searchId));
    const result = await entry.result;
    if (!result.ok) throw new HttpError(result.status, result.message);
    reply.json(200, { search: (result.value as SearchRunValue).search });
  }

  async function runStream(req: Req, reply: Reply) {
    const searchId = req.params.searchId!;
    const running = supervisor.find('search', searchId);
    if (running) return supervisor.attach(running, openStream(reply));
    const request = await runRequest(req, searchId);
    joinOrLaunch(searchId, request, openStream(reply));
  }

  async function attach(req: Req, reply: Reply) {
    const entry = supervisor.find('search', req.params.searchId!);
    if (!entry) throw notFound(ACTIVE_SEARCH_STREAM_NOT_FOUND);
    supervisor.attach(entry, openStream(reply));
  }

  async function toChat(req: Req, reply: Reply) {
    const body = await readJson(req, searchChatSchema);
    const search = await getSearchDetail(pool, req.params.searchId!);
    if (!search) throw notFound(SEARCH_NOT_FOUND);
    const chat = await createChat(pool, {
      title: body.title ?? defaultSearchChatTitle(search),
      enabledTools: app.tools.map((t) => t.name),
      messages: [searchSeedMessage(search)],
    });
    reply.json(200, { chat });
  }

  return [
    { method: 'POST', path: '/v1/searches/:searchId/run', handler: runWhole },
    { method: 'POST', path: '/v1/searches/:searchId/run/stream', handler: runStream },
    { method: 'POST', path: '/v1/searches/:searchId/run/stream/attach', handler: attach },
    { method: 'POST', path: '/v1/searches/:searchId/chat', handler: toChat },
  ];
}
