// Describes attachments compactly (type, media type, decoded size) for `echoInput`, so tests can
// check what the service forwarded without the simulator echoing megabytes of base64.
import type { AttachmentInfo } from './script.ts';

export function base64Bytes(data: string): number {
  const len = data.length;
  if (len === 0) return 0;
  const pad = data.endsWith('==') ? 2 : data.endsWith('=') ? 1 : 0;
  return Math.floor((len * 3) / 4) - pad;
}

/** `data:<type>;base64,<data>` → media type and size; other strings are plain URLs. */
export function describeUrl(type: string, url: string, filename?: string): AttachmentInfo {
  const m = /^data:([^;,]*)(;base64)?,/.exec(url);
  const info: AttachmentInfo = { type };
  if (m) {
    info.mediaType = m[1] || 'text/plain';
    const payload = url.slice(m[0].length);
    info.bytes = m[2] ? base64Bytes(payload) : decodeURIComponent(payload).length;
  } else {
    info.url = url;
  }
  if (filename !== undefined) info.filename = filename;
  return info;
}
