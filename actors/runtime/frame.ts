// Pre-encoded SSE frames. JSON.stringify never emits a raw newline, so one `data:` line is enough.
export function sseFrame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The hot path: a delta frame built by string concatenation only. */
export function deltaFrame(text: string): string {
  return `event: delta\ndata: {"type":"delta","text":${JSON.stringify(text)}}\n\n`;
}

/** An SSE comment (`: text`): clients skip it; it keeps a quiet stream's connection alive. */
export function commentFrame(text: string): string {
  return `: ${text}\n\n`;
}
