// Managing users (docs/operations.md, "Users and single sign-on"): the admin token only. Keys are made here, shown once in
// the answer, and stored as a hash; rotation, disabling and deletion are announced to every instance.
import { ADMIN_USER_ID } from '../base/types.ts';
import { newApiKey, keyHash } from '../auth/keys.ts';
import type { AppContext } from '../service/context.ts';
import { readJson } from '../http/body.ts';
import { ADMIN_REQUIRED, badRequest, USER_NOT_FOUND, USERS_NEED_ADMIN_TOKEN } from '../http/errors.ts';
import type { Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { usageByDay } from '../store/usage.ts';
import { createUser, deleteUser, getUser, listUsers, replaceKey, updateUser } from '../store/users.ts';
import { createUserSchema, patchUserSchema } from '../auth/user-schemas.ts';
import type { UserRevocations } from '../service/users.ts';

const USER_BODY_LIMIT = 16 * 1024;

export const USAGE_DAYS_DEFAULT = 30;

/** `?days=N`: 1–90 whole days, 30 when absent. */
export function usageDays(query: URLSearchParams): number {
  const raw = query.get('days');
  if (raw === null) return USAGE_DAYS_DEFAULT;
  const n = /^\d{1,2}$/.test(raw.trim()) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 90)) throw badRequest('days must be an integer from 1 to 90');
  return n;
}

/** Users exist in token mode only, and only the operator manages them. */
export function requireAdmin(app: AppContext, req: Req): void {
  if (!app.config.ADMIN_TOKEN) throw USERS_NEED_ADMIN_TOKEN();
  if (!req.caller.admin) throw ADMIN_REQUIRED();
}

export function userRoutes(app: AppContext, revocations: UserRevocations): Route[] {
  const { pool } = app;
  const admin = (handler: Route['handler']): Route['handler'] => (req, reply) => {
    requireAdmin(app, req);
    return handler(req, reply);
  };
  return [
    {
      method: 'POST',
      path: '/v1/users',
      bodyLimit: USER_BODY_LIMIT,
      handler: admin(async (req, reply) => {
        const body = await readJson(req, createUserSchema);
        const apiKey = newApiKey();
        const user = await createUser(pool, { name: body.name, maxActiveRuns: body.maxActiveRuns ?? null, tokensPerDay: body.tokensPerDay ?? null, costPerDay: body.costPerDay ?? null, keyHash: keyHash(apiKey) });
        reply.json(201, { user, apiKey });
      }),
    },
    {
      method: 'GET',
      path: '/v1/users',
      handler: admin(async (_req, reply) => reply.json(200, { users: await listUsers(pool) })),
    },
    {
      method: 'GET',
      path: '/v1/users/:userId',
      handler: admin(async (req, reply) => {
        const user = await getUser(pool, req.params.userId!);
        if (!user) throw USER_NOT_FOUND();
        reply.json(200, { user });
      }),
    },
    {
      method: 'PATCH',
      path: '/v1/users/:userId',
      bodyLimit: USER_BODY_LIMIT,
      handler: admin(async (req, reply) => {
        const body = await readJson(req, patchUserSchema);
        const user = await updateUser(pool, req.params.userId!, body);
        if (!user) throw USER_NOT_FOUND();
        // A disabled user's cached keys must stop now, and new limits apply from the next request (the
        // cache holds them); re-enabling alone needs nothing (keys are looked up).
        if (body.disabled === true || body.maxActiveRuns !== undefined || body.tokensPerDay !== undefined || body.costPerDay !== undefined) await revocations.revoke(user.id, false);
        reply.json(200, { user });
      }),
    },
    {
      method: 'POST',
      path: '/v1/users/:userId/keys',
      handler: admin(async (req, reply) => {
        const userId = req.params.userId!;
        const apiKey = newApiKey();
        if (!(await replaceKey(pool, userId, keyHash(apiKey)))) throw USER_NOT_FOUND();
        await revocations.revoke(userId, false);
        reply.json(201, { apiKey });
      }),
    },
    {
      method: 'GET',
      path: '/v1/users/:userId/usage',
      handler: admin(async (req, reply) => {
        const days = usageDays(req.query);
        const userId = req.params.userId!;
        // The built-in admin has no row but has usage: everything stored before users existed.
        if (userId !== ADMIN_USER_ID && !(await getUser(pool, userId))) throw USER_NOT_FOUND();
        reply.json(200, { usage: await usageByDay(pool, userId, days) });
      }),
    },
    {
      method: 'GET',
      path: '/v1/usage',
      // Open mode: the one workspace, which is the built-in admin's.
      handler: async (req, reply) => reply.json(200, { usage: await usageByDay(pool, req.caller.userId, usageDays(req.query)) }),
    },
    {
      method: 'DELETE',
      path: '/v1/users/:userId',
      handler: admin(async (req, reply) => {
        const userId = req.params.userId!;
        if (!(await deleteUser(pool, userId))) throw USER_NOT_FOUND();
        await revocations.revoke(userId, true);
        reply.json(200, { deleted: true });
      }),
    },
  ];
}
