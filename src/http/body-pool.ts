// Big request bodies are parsed and checked (JSON, text, depth, schema, attachments) in the CPU pool,
// so twenty 30 MB bodies at once leave the event loop free for /health and every stream. Small ones
// stay on the event loop: below OFFLOAD_BODY_BYTES a worker round trip costs more than the parse.
import type { z } from 'zod';
import type { CpuPool } from '../base/cpu-pool.ts';
import { BODY_SCHEMAS, type BodySchemaName } from '../domain/schemas.ts';
import type { BodyOutcome, BodyTask } from './body-parse.ts';

export const OFFLOAD_BODY_BYTES = 256 * 1024;

const NAMES = new Map<z.ZodType, BodySchemaName>(
  (Object.entries(BODY_SCHEMAS) as Array<[BodySchemaName, z.ZodType]>).map(([name, schema]) => [schema, name]),
);
const WORKER = new URL('./body-worker.mjs', import.meta.url);

/** The name a worker knows `schema` by, or undefined for a schema it does not know (parsed here). */
export const bodySchemaName = (schema: z.ZodType): BodySchemaName | undefined => NAMES.get(schema);

/** One server's big bodies, parsed in its CPU pool. */
export class BodyPool {
  /** Bodies parsed in the pool since start (tests and metrics). */
  offloaded = 0;

  constructor(private readonly cpu: CpuPool) {}

  parse(buf: Buffer, schema: BodySchemaName, fingerprint = false): Promise<BodyOutcome> {
    this.offloaded++;
    // Moved, not copied. A Buffer sharing a pooled ArrayBuffer (small ones do) is copied first, since
    // moving that memory would detach its neighbours; the bodies that get here are big and own theirs.
    const own = buf.byteOffset === 0 && buf.byteLength === buf.buffer.byteLength ? buf : Buffer.from(buf);
    const bytes = new Uint8Array(own.buffer, 0, own.byteLength);
    return this.cpu.run<BodyTask, BodyOutcome>(WORKER, { bytes, schema, fingerprint }, { transferList: [own.buffer as ArrayBuffer] });
  }
}
