// Single sign-on's configuration: a JWKS URL that is not http(s), an issuer/audience without one, or a
// JWKS URL without ADMIN_TOKEN stops the start naming the variable, rather than leaving SSO silently off.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/base/config.ts';

const refuses = (env: Record<string, string>, message: string) =>
  assert.throws(() => loadConfig(env), (err) => err instanceof ConfigError && err.message === message);

describe('AUTH_JWKS_URL, AUTH_ISSUER, AUTH_AUDIENCE', () => {
  it('are unset by default, and taken as given when the JWKS URL is http(s)', () => {
    const none = loadConfig({});
    assert.deepEqual([none.AUTH_JWKS_URL, none.AUTH_ISSUER, none.AUTH_AUDIENCE], [undefined, undefined, undefined]);
    const kc = loadConfig({
      ADMIN_TOKEN: 'operator',
      AUTH_JWKS_URL: 'https://sso.example.com/realms/team/protocol/openid-connect/certs',
      AUTH_ISSUER: 'https://sso.example.com/realms/team',
      AUTH_AUDIENCE: 'conversation-search',
    });
    assert.equal(kc.AUTH_JWKS_URL, 'https://sso.example.com/realms/team/protocol/openid-connect/certs');
    assert.equal(kc.AUTH_ISSUER, 'https://sso.example.com/realms/team');
    assert.equal(kc.AUTH_AUDIENCE, 'conversation-search');
    assert.equal(loadConfig({ ADMIN_TOKEN: 'operator', AUTH_JWKS_URL: 'http://127.0.0.1:8080/certs' }).AUTH_JWKS_URL, 'http://127.0.0.1:8080/certs');
  });

  it('refuse a JWKS URL that is not http(s), naming the variable', () => {
    for (const bad of ['ftp://sso.example.com/certs', 'sso.example.com/certs', 'https://', 'file:///etc/jwks.json']) {
      refuses({ ADMIN_TOKEN: 'operator', AUTH_JWKS_URL: bad }, 'invalid configuration: AUTH_JWKS_URL: must be an http:// or https:// URL');
    }
  });

  it('refuse an issuer or an audience without the JWKS URL', () => {
    for (const name of ['AUTH_ISSUER', 'AUTH_AUDIENCE']) {
      refuses(
        { [name]: 'x' },
        `invalid configuration: AUTH_JWKS_URL is required when ${name} is set (single sign-on verifies tokens against it)`,
      );
    }
  });

  it('refuse a JWKS URL without ADMIN_TOKEN: open mode would check no token at all', () => {
    refuses(
      { AUTH_JWKS_URL: 'https://sso.example.com/certs' },
      'invalid configuration: AUTH_JWKS_URL needs ADMIN_TOKEN (without it the service is in open mode, where every request is the admin and no JWT is checked)',
    );
  });
});
