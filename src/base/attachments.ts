// Attachment checks. Images are checked by their bytes (magic numbers), not only the declared type,
// and sized from the base64 length without decoding the whole payload on the event loop.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import type { Attachment } from './types.ts';
import { sliceUnits } from './text.ts';

export const MAX_ATTACHMENTS = 8;
export const MAX_IMAGE_BYTES = 6 * 1024 * 1024;
export const MAX_TEXT_SOURCE_BYTES = 8 * 1024 * 1024;
export const MAX_INLINED_TEXT_CHARS = 200_000;

const IMAGE_TYPES = ['image/png', 'image/jpeg'] as const;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Base64 that decodes to exactly the bytes it claims: padding only to close the last 4-character group,
 * and never one character past a whole group (6 bits end no byte). Node's decoder would accept both and
 * quietly drop the stray bits, so the stored image would not be the one the size was measured from.
 */
function isBase64(b64: string): boolean {
  if (!BASE64.test(b64)) return false;
  return b64.endsWith('=') ? b64.length % 4 === 0 : b64.length % 4 !== 1;
}

const imageSchema = z.object({
  kind: z.literal('image'),
  id: z.string().min(1).optional(),
  filename: z.string().min(1),
  mimeType: z.string(),
  sizeBytes: z.number().int().nonnegative().optional(),
  dataUrl: z.string().min(1),
});

const textSchema = z.object({
  kind: z.literal('text'),
  id: z.string().min(1).optional(),
  filename: z.string().min(1),
  mimeType: z.string().min(1),
  sizeBytes: z.number().int().nonnegative().optional(),
  text: z.string(),
  truncated: z.boolean().optional(),
});

const attachmentSchema = z.discriminatedUnion('kind', [imageSchema, textSchema]);

function decodedLength(b64: string): number {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.floor((b64.length * 3) / 4) - padding;
}

function sniffImage(b64: string): 'image/png' | 'image/jpeg' | null {
  const head = Buffer.from(b64.slice(0, 16), 'base64');
  if (head.length >= 8 && head.readUInt32BE(0) === 0x89504e47 && head.readUInt32BE(4) === 0x0d0a1a0a) return 'image/png';
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) return 'image/jpeg';
  return null;
}

function checkImage(a: z.infer<typeof imageSchema>, ctx: z.RefinementCtx): Attachment {
  const declared = a.mimeType.toLowerCase() === 'image/jpg' ? 'image/jpeg' : a.mimeType.toLowerCase();
  if (!(IMAGE_TYPES as readonly string[]).includes(declared)) {
    ctx.addIssue({ code: 'custom', message: `image mimeType must be image/png or image/jpeg (got ${a.mimeType})`, path: ['mimeType'] });
    return z.NEVER;
  }
  const m = /^data:([^;,]+);base64,/i.exec(a.dataUrl);
  if (!m) {
    ctx.addIssue({ code: 'custom', message: 'dataUrl must be a base64 data URL (data:<type>;base64,…)', path: ['dataUrl'] });
    return z.NEVER;
  }
  const b64 = a.dataUrl.slice(m[0].length);
  if (!isBase64(b64)) {
    ctx.addIssue({ code: 'custom', message: 'dataUrl is not valid base64', path: ['dataUrl'] });
    return z.NEVER;
  }
  const size = decodedLength(b64);
  if (size > MAX_IMAGE_BYTES) {
    ctx.addIssue({ code: 'custom', message: `image is ${size} bytes, over the ${MAX_IMAGE_BYTES} byte (6 MB) limit`, path: ['dataUrl'] });
    return z.NEVER;
  }
  const actual = sniffImage(b64);
  if (actual === null) {
    ctx.addIssue({ code: 'custom', message: 'image content is neither PNG nor JPEG', path: ['dataUrl'] });
    return z.NEVER;
  }
  if (actual !== declared) {
    ctx.addIssue({ code: 'custom', message: `image content is ${actual} but mimeType says ${a.mimeType}`, path: ['mimeType'] });
    return z.NEVER;
  }
  return {
    kind: 'image',
    id: a.id ?? randomUUID(),
    filename: a.filename,
    mimeType: actual,
    sizeBytes: size,
    dataUrl: `data:${actual};base64,${b64}`,
  };
}

function checkText(a: z.infer<typeof textSchema>, ctx: z.RefinementCtx): Attachment {
  const sourceBytes = Math.max(a.sizeBytes ?? 0, Buffer.byteLength(a.text, 'utf8'));
  if (sourceBytes > MAX_TEXT_SOURCE_BYTES) {
    ctx.addIssue({ code: 'custom', message: `text attachment source is ${sourceBytes} bytes, over the 8 MB limit`, path: ['sizeBytes'] });
    return z.NEVER;
  }
  const cut = a.text.length > MAX_INLINED_TEXT_CHARS;
  return {
    kind: 'text',
    id: a.id ?? randomUUID(),
    filename: a.filename,
    mimeType: a.mimeType,
    sizeBytes: a.sizeBytes ?? Buffer.byteLength(a.text, 'utf8'),
    text: cut ? sliceUnits(a.text, MAX_INLINED_TEXT_CHARS) : a.text,
    truncated: cut || a.truncated === true,
  };
}

/** Validates and normalizes attachments: ids filled in, sizes measured, long text cut. */
export const attachmentsSchema = z
  .array(
    attachmentSchema.transform((a, ctx): Attachment => (a.kind === 'image' ? checkImage(a, ctx) : checkText(a, ctx))),
  )
  .max(MAX_ATTACHMENTS, `at most ${MAX_ATTACHMENTS} attachments per message`);
