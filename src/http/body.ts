// JSON bodies: content type, size (see bodyReader), then syntax, storable text and depth
// (json-check.ts) and shape (body-parse.ts), each with its own clear 4xx. Big bodies are parsed and
// checked in the CPU pool (body-pool.ts) so they never stall the event loop.
import type { z } from 'zod';
import { parseJsonBody, parseWith } from './body-parse.ts';
import { bodySchemaName, OFFLOAD_BODY_BYTES } from './body-pool.ts';
import { BAD_REQUEST, UNSUPPORTED_MEDIA_TYPE } from './errors.ts';
import type { Req } from './reply.ts';

export { describeIssues, parseWith } from './body-parse.ts';

/** Reads and validates a JSON body. An empty body is validated as `{}`. */
export async function readJson<S extends z.ZodType>(req: Req, schema: S): Promise<z.infer<S>> {
  const buf = await req.body();
  if (buf.length === 0) return parseWith(schema, {});
  const type = req.contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw UNSUPPORTED_MEDIA_TYPE(type);
  }
  const name = buf.length >= OFFLOAD_BODY_BYTES ? bodySchemaName(schema) : undefined;
  const outcome = name ? await req.offload.parse(buf, name) : parseJsonBody(buf, schema);
  if (!outcome.ok) throw BAD_REQUEST(outcome.message);
  return outcome.value as z.infer<S>;
}
