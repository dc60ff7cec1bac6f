// The Idempotency-Key request header: its validation, and the fingerprint of the request it came
// with (the endpoint and the body as the client sent it), so a reused key can be told from a retry.
import { createHash } from 'node:crypto';
import { BAD_IDEMPOTENCY_KEY } from './errors.ts';
import type { Req } from './reply.ts';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** On answers to a keyed request that started nothing new (attached, waited or replayed). */
export const REPLAYED_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'idempotent-replayed': 'true' });

// 1–255 printable ASCII characters (space allowed inside; HTTP strips it at the ends anyway).
const VALID_KEY = /^[\x20-\x7e]{1,255}$/;

/** The request's Idempotency-Key, null when absent; 400 naming the header when malformed. */
export function idempotencyKeyOf(req: Req): string | null {
  const key = req.headers[IDEMPOTENCY_KEY_HEADER];
  if (key === undefined) return null;
  if (!VALID_KEY.test(key) || key.trim() === '') {
    throw BAD_IDEMPOTENCY_KEY();
  }
  return key;
}

/** The request's fingerprint: the endpoint and its body's (bodyFingerprint, src/http/fingerprint.ts). */
export function requestHash(endpoint: string, bodyDigest: string): string {
  return createHash('sha256').update(endpoint).update('\n').update(bodyDigest).digest('hex');
}
