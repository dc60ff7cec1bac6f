// Managing users (ARCHITECTURE.md, "Users"): the admin token only. Keys are made here, shown once in
// the answer, and stored as a hash; rotation, disabling and deletion are announced to every instance.
import { z } from 'zod';
import { newApiKey, keyHash } from '../auth/keys.ts';
import type { AppContext } from '../context.ts';
import { readJson } from '../http/body.ts';
import { ADMIN_REQUIRED, USER_NOT_FOUND, USERS_NEED_ADMIN_TOKEN } from '../http/errors.ts';
import type { Req } from '../http/reply.ts';
import type { Route } from '../http/router.ts';
import { createUser, deleteUser, getUser, listUsers, replaceKey, updateUser } from '../store/users.ts';
import type { UserRevocations } from '../users.ts';

const USER_BODY_LIMIT = 16 * 1024;

const name = z.string({ error: 'must be a string' }).trim().min(1, 'must not be blank').max(100, 'must be at most 100 characters');
const limit = z.number({ error: 'must be an integer ≥ 1 or null' }).int('must be an integer ≥ 1 or null').min(1, 'must be an integer ≥ 1 or null').nullable();

export const createUserSchema = z.object({ name, maxActiveRuns: limit.optional(), tokensPerDay: limit.optional() });
export const patchUserSchema = z.object({
  name: name.optional(),
  maxActiveRuns: limit.optional(),
  tokensPerDay: limit.optional(),
  disabled: z.boolean({ error: 'must be a boolean' }).optional(),
});

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
        const user = await createUser(pool, { name: body.name, maxActiveRuns: body.maxActiveRuns ?? null, tokensPerDay: body.tokensPerDay ?? null, keyHash: keyHash(apiKey) });
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
        // A disabled user's cached keys must stop now; re-enabling needs nothing (keys are looked up).
        if (body.disabled === true) await revocations.revoke(user.id, false);
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
