// The fingerprint of a request body as the client sent it (an Idempotency-Key retry's must match the
// first request's: src/http/idempotency.ts). Its own module: the body parser takes it (body-parse.ts),
// on the event loop or in the CPU pool, and imports nothing of the HTTP side.
import { createHash } from 'node:crypto';

/**
 * The fingerprint of a body as the client sent it: sha256 of its canonical JSON (object keys sorted), so
 * the same body re-serialised in another key order is still the same body. Taken over the parsed JSON,
 * never the validated value: validation fills in what the client left out (a fresh random id for each
 * attachment sent without one), and two byte-identical retries would then never match.
 */
export function bodyFingerprint(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).filter((k) => obj[k] !== undefined).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
}
