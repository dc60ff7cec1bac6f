// API keys: `css_` and 32 random bytes in base64url. Only the sha-256 of a key is ever stored or
// cached, so a database or memory dump gives no usable key.
import { createHash, randomBytes } from 'node:crypto';

export const KEY_PREFIX = 'css_';

export function newApiKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

export function keyHash(key: string): Buffer {
  return createHash('sha256').update(key).digest();
}

/** Has the shape of one of our keys (anything else is never looked up). */
export function looksLikeKey(token: string): boolean {
  return token.startsWith(KEY_PREFIX) && token.length === KEY_PREFIX.length + 43;
}

/** Has the shape of a compact JWS (three base64url parts). */
export function looksLikeJwt(token: string): boolean {
  return /^[\w-]+\.[\w-]+\.[\w-]+$/.test(token);
}
