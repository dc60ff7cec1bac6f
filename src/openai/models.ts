// The façade's models: every model of every enabled provider as `provider/model`, and how a request's
// `model` names one (that id, or a bare model id exactly one provider lists).
import type { AppContext } from '../service/context.ts';
import type { Route } from '../http/router.ts';
import { PROVIDERS, type ProviderName } from '../providers/types.ts';
import { AMBIGUOUS_MODEL, MODEL_NOT_FOUND } from './errors.ts';
import { counted } from './requests.ts';

export interface OpenAIModel {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
}

/** Every listed model of the providers this instance can call, in provider order. */
export function listModels(app: AppContext): OpenAIModel[] {
  const out: OpenAIModel[] = [];
  const snapshot = app.models.snapshot();
  for (const provider of PROVIDERS) {
    const entry = snapshot[provider];
    if (!entry || !app.providers.has(provider)) continue;
    const created = entry.loadedAt ? Math.floor(Date.parse(entry.loadedAt) / 1000) : 0;
    for (const model of entry.models) out.push({ id: `${provider}/${model}`, object: 'model', created, owned_by: provider });
  }
  return out;
}

export interface ResolvedModel {
  provider: ProviderName;
  model: string;
  /** As the client should see it in answers: `provider/model`. */
  id: string;
}

const isProvider = (name: string): name is ProviderName => (PROVIDERS as readonly string[]).includes(name);

/**
 * `provider/model` for a configured provider (any model id: the provider decides, as on the native API),
 * or a bare id that exactly one provider lists. Else 404, or 400 when several providers list it.
 */
export function resolveModel(app: AppContext, requested: string): ResolvedModel {
  const slash = requested.indexOf('/');
  if (slash > 0) {
    const provider = requested.slice(0, slash);
    const model = requested.slice(slash + 1);
    if (isProvider(provider) && app.providers.has(provider) && model.length > 0) return { provider, model, id: requested };
  }
  const owners = listModels(app).filter((m) => m.id.slice(m.owned_by.length + 1) === requested);
  if (owners.length === 1) return { provider: owners[0]!.owned_by as ProviderName, model: requested, id: owners[0]!.id };
  if (owners.length > 1) throw AMBIGUOUS_MODEL(requested, owners.map((m) => m.owned_by).join(', '));
  throw MODEL_NOT_FOUND(requested);
}

export function modelRoutes(app: AppContext): Route[] {
  return [
    {
      method: 'GET',
      path: '/openai/v1/models',
      handler: counted(app, 'models', (_req, reply) => reply.json(200, { object: 'list', data: listModels(app) })),
    },
    {
      // The id's slash may come encoded (`provider_c%2Fsim-c-large`, decoded by the router) or not (two segments).
      method: 'GET',
      path: '/openai/v1/models/:id',
      handler: counted(app, 'models', (req, reply) => oneModel(app, req.params.id!, reply)),
    },
    {
      method: 'GET',
      path: '/openai/v1/models/:provider/:model',
      handler: counted(app, 'models', (req, reply) => oneModel(app, `${req.params.provider}/${req.params.model}`, reply)),
    },
  ];
}

function oneModel(app: AppContext, id: string, reply: { json(status: number, body: unknown): void }): void {
  const models = listModels(app);
  // The id as listed, or a bare model id exactly one provider lists (as a request's `model` may be).
  let found = models.find((m) => m.id === id);
  if (!found) {
    const bare = models.filter((m) => m.id.slice(m.owned_by.length + 1) === id);
    if (bare.length === 1) found = bare[0];
  }
  if (!found) throw MODEL_NOT_FOUND(id);
  reply.json(200, found);
}
