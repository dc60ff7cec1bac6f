// JSON bodies: content type, size (see bodyReader), syntax and shape, each with its own clear 4xx.
import type { z } from 'zod';
import { HttpError } from './errors.ts';
import type { Req } from './reply.ts';

/** Formats zod issues as `field: problem; other.field: problem`, naming each field by its path. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => {
      const path = i.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.').replace(/\.\[/g, '[');
      return path ? `${path}: ${i.message}` : i.message;
    })
    .join('; ');
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, what = 'request body'): z.infer<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new HttpError(400, `invalid ${what}: ${describeIssues(parsed.error)}`);
  return parsed.data;
}

/** Reads and validates a JSON body. An empty body is validated as `{}`. */
export async function readJson<S extends z.ZodType>(req: Req, schema: S): Promise<z.infer<S>> {
  const buf = await req.body();
  if (buf.length === 0) return parseWith(schema, {});
  const type = req.contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new HttpError(415, `content-type must be application/json (got ${type || 'none'})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(buf.toString('utf8'));
  } catch (err) {
    throw new HttpError(400, `malformed JSON body: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new HttpError(400, 'request body must be a JSON object');
  }
  return parseWith(schema, value);
}
