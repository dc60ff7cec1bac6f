// The ~30 MB request body of issue 16's event-loop finding, shared by the test and the bench.

/** A completion body of about 4 × `attachmentMB` + 2 MB (31 MB by default): four text attachments, each checked, and a 2 MB message. */
export function bigCompletionBody(temperature: number, attachmentMB = 7): Buffer {
  const text = 'lorem ipsum '.repeat(650_000).slice(0, attachmentMB * 1024 * 1024);
  const attachments = Array.from({ length: 4 }, (_, i) => ({ kind: 'text', filename: `part-${i}.txt`, mimeType: 'text/plain', text }));
  return Buffer.from(JSON.stringify({ provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: 'x'.repeat(2_000_000), attachments }], temperature }));
}
