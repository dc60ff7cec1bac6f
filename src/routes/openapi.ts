// GET /v1/openapi.json: the OpenAPI document of every route, itself included, built once here
// (at start) and served as the same bytes on every request.
import type { Route } from '../http/router.ts';
import { openApiDocument } from '../openapi/document.ts';

const JSON_TYPE = 'application/json; charset=utf-8';

/** `routes` plus the document's own route; the document describes all of them. */
export function withOpenApiRoute(routes: readonly Route[]): Route[] {
  let json = '';
  const self: Route = { method: 'GET', path: '/v1/openapi.json', public: true, handler: (_req, reply) => reply.text(200, json, JSON_TYPE) };
  const all = [...routes, self];
  json = JSON.stringify(openApiDocument(all));
  return all;
}
