// Users in API tests: the admin token, and users made through the admin endpoints, each a client
// whose requests carry its own key.
import assert from 'node:assert/strict';
import type { TestServer } from './server.ts';

export const ADMIN_TOKEN = 'users-test-admin-token';

/** A user made through the admin endpoints, with the test server's client acting as them. */
export interface AsUser extends Pick<TestServer, 'call' | 'stream'> {
  id: string;
  name: string;
  key: string;
}

/** A client that sends `token` as its bearer. */
export function as(t: TestServer, token: string): Pick<TestServer, 'call' | 'stream'> {
  const auth = { authorization: `Bearer ${token}` };
  return {
    call: (method, path, body, headers = {}) => t.call(method, path, body, { ...auth, ...headers }),
    stream: (path, body, opts = {}) => t.stream(path, body, { ...opts, headers: { ...auth, ...opts.headers } }),
  };
}

/** Creates a user through POST /v1/users and returns a client acting as them. */
export async function createUser(t: TestServer, name: string, extra: Record<string, unknown> = {}): Promise<AsUser> {
  const r = await as(t, ADMIN_TOKEN).call('POST', '/v1/users', { name, ...extra });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return { id: r.body.user.id, name, key: r.body.apiKey, ...as(t, r.body.apiKey) };
}

/** A completion body on the simulated provider_c, without tools. */
export function chatBody(content: string, extra: Record<string, unknown> = {}) {
  return { provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content }], ...extra };
}
