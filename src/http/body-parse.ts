// A JSON body from bytes to a validated value, as a pure function: it runs on the event loop for
// small bodies and in the CPU pool for big ones (body-pool.ts), with the same answers either way.
import type { z } from 'zod';
import { BODY_SCHEMAS, type BodySchemaName } from '../domain/schemas.ts';
import { INVALID_BODY } from './errors.ts';
import { bodyFingerprint } from './fingerprint.ts';
import { jsonProblem } from './json-check.ts';

/** `fingerprint`: the body's as the client sent it (bodyFingerprint), when asked for. */
export type BodyOutcome = { ok: true; value: unknown; fingerprint?: string } | { ok: false; message: string };

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
  if (!parsed.success) throw INVALID_BODY(what, describeIssues(parsed.error));
  return parsed.data;
}

const refuse = (message: string): BodyOutcome => ({ ok: false, message });

export function parseJsonBody(bytes: Uint8Array, schema: z.ZodType, fingerprint = false): BodyOutcome {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (err) {
    return refuse(`malformed JSON body: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return refuse('request body must be a JSON object');
  // Before the schema: nothing downstream may see text Postgres refuses or nesting that overflows.
  const problem = jsonProblem(value);
  if (problem) return refuse(`invalid request body: ${problem}`);
  // Taken before the schema fills anything in (bodyFingerprint).
  const sent = fingerprint ? bodyFingerprint(value) : undefined;
  const parsed = schema.safeParse(value);
  if (!parsed.success) return refuse(`invalid request body: ${describeIssues(parsed.error)}`);
  return { ok: true, value: parsed.data, fingerprint: sent };
}

export interface BodyTask {
  bytes: Uint8Array;
  schema: BodySchemaName;
  fingerprint?: boolean;
}

/** The CPU pool's task (body-worker.mjs): schemas travel by name, bytes by transfer. */
export function parseNamedBody(task: BodyTask): BodyOutcome {
  return parseJsonBody(task.bytes, BODY_SCHEMAS[task.schema], task.fingerprint);
}
