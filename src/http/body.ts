// JSON bodies: content type, size (see bodyReader), then syntax, storable text and depth
// (json-check.ts) and shape (body-parse.ts), each with its own clear 4xx. Big bodies are parsed and
// checked in the CPU pool (body-pool.ts) so they never stall the event loop.
import type { z } from 'zod';
import { parseJsonBody, parseWith } from './body-parse.ts';
import { bodySchemaName, OFFLOAD_BODY_BYTES } from './body-pool.ts';
import { BAD_REQUEST, UNSUPPORTED_MEDIA_TYPE } from './errors.ts';
import { bodyFingerprint } from './fingerprint.ts';
import type { Req } from './reply.ts';

export { describeIssues, parseWith } from './body-parse.ts';

/** Reads and validates a JSON body. An empty body is validated as `{}`. */
export async function readJson<S extends z.ZodType>(req: Req, schema: S): Promise<z.infer<S>> {
  return (await read(req, schema, false)).body;
}

/** readJson, with the fingerprint of the body as the client sent it (bodyFingerprint): what a keyed retry must match. */
export function readFingerprintedJson<S extends z.ZodType>(req: Req, schema: S): Promise<{ body: z.infer<S>; fingerprint: string }> {
  return read(req, schema, true) as Promise<{ body: z.infer<S>; fingerprint: string }>;
}

async function read<S extends z.ZodType>(req: Req, schema: S, fingerprint: boolean): Promise<{ body: z.infer<S>; fingerprint?: string }> {
  const buf = await req.body();
  if (buf.length === 0) return { body: parseWith(schema, {}), fingerprint: fingerprint ? bodyFingerprint({}) : undefined };
  const type = req.contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw UNSUPPORTED_MEDIA_TYPE(type);
  }
  const name = buf.length >= OFFLOAD_BODY_BYTES ? bodySchemaName(schema) : undefined;
  const outcome = name ? await req.offload.parse(buf, name, fingerprint) : parseJsonBody(buf, schema, fingerprint);
  if (!outcome.ok) throw BAD_REQUEST(outcome.message);
  return { body: outcome.value as z.infer<S>, fingerprint: outcome.fingerprint };
}
