// A Chat Completions request body (wire-formats.md §2, served) and its translation into a run's history,
// client functions and settings. Unknown fields are ignored: clients send many.
import { z } from 'zod';
import { stopSchema, topPSchema } from './sampling.ts';
import { attachmentsSchema } from '../base/attachments.ts';
import { describeIssues } from '../http/body.ts';
import type { ToolSpec } from '../providers/types.ts';
import type { RunMessage } from '../domain/schemas.ts';
import type { Attachment } from '../base/types.ts';
import { invalidParam } from './errors.ts';

const textPart = z.object({ type: z.literal('text'), text: z.string() });
const imagePart = z.object({ type: z.literal('image_url'), image_url: z.union([z.string(), z.object({ url: z.string() })]) });
const part = z.union([textPart, imagePart, z.object({ type: z.string() })]);
const content = z.union([z.string(), z.array(part)]).nullish();

const toolCall = z.object({
  id: z.string().min(1),
  type: z.literal('function').optional(),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.discriminatedUnion('role', [
  z.object({ role: z.literal('system'), content }),
  z.object({ role: z.literal('developer'), content }),
  z.object({ role: z.literal('user'), content, name: z.string().optional() }),
  z.object({ role: z.literal('assistant'), content, tool_calls: z.array(toolCall).optional() }),
  z.object({ role: z.literal('tool'), content, tool_call_id: z.string().min(1) }),
]);

/** A function tool as OpenAI's `tools` entry (Chat Completions: nested `function`). */
export const chatTool = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }),
});

export const chatCompletionSchema = z.object({
  model: z.string().min(1, 'must not be empty'),
  messages: z.array(message).min(1, 'must contain at least one message'),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  tools: z.array(chatTool).nullish(),
  tool_choice: z.unknown().optional(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: topPSchema,
  stop: stopSchema,
  user: z.string().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  store: z.boolean().nullish(),
  /** Extension: the service's tools (web_search, fetch_url, …) this request may use; none otherwise. */
  service_tools: z.array(z.string()).nullish(),
});
export type ChatCompletionBody = z.infer<typeof chatCompletionSchema>;

type Content = z.infer<typeof content>;

/** Text and images of a content field; images become the spec's attachments (its rules apply). */
export function contentOf(c: Content, param: string, images: boolean): { text: string; attachments: Attachment[] } {
  if (c === null || c === undefined) return { text: '', attachments: [] };
  if (typeof c === 'string') return { text: c, attachments: [] };
  let text = '';
  const sources: unknown[] = [];
  for (const p of c) {
    if (p.type === 'text' || p.type === 'input_text' || p.type === 'output_text') text += (p as { text?: string }).text ?? '';
    else if ((p.type === 'image_url' || p.type === 'input_image') && images) sources.push(imageAttachment(p as { image_url: unknown }, param, sources.length));
    else throw invalidParam(param, `${param}: content part type '${p.type}' is not supported here`);
  }
  if (sources.length === 0) return { text, attachments: [] };
  const parsed = attachmentsSchema.safeParse(sources);
  if (!parsed.success) throw invalidParam(param, `${param}: ${describeIssues(parsed.error)}`);
  return { text, attachments: parsed.data };
}

function imageAttachment(p: { image_url: unknown }, param: string, index: number): unknown {
  const url = typeof p.image_url === 'string' ? p.image_url : (p.image_url as { url?: string } | undefined)?.url;
  if (typeof url !== 'string' || !url.startsWith('data:')) throw invalidParam(param, `${param}: an image must be a data: URL (data:image/png;base64,…)`);
  const mimeType = /^data:([^;,]+)/.exec(url)?.[1] ?? 'application/octet-stream';
  return { kind: 'image', filename: `image-${index + 1}.${mimeType.endsWith('png') ? 'png' : 'jpg'}`, mimeType, dataUrl: url };
}

/** The run's history: system and developer messages as the system prompt, tool calls and their results kept. */
export function runMessages(body: ChatCompletionBody): RunMessage[] {
  return body.messages.map((m, i): RunMessage => {
    const param = `messages[${i}].content`;
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: contentOf(m.content, param, false).text };
      case 'user': {
        const { text, attachments } = contentOf(m.content, param, true);
        return attachments.length ? { role: 'user', content: text, attachments } : { role: 'user', content: text };
      }
      case 'assistant': {
        const out: RunMessage = { role: 'assistant', content: contentOf(m.content, param, false).text };
        if (m.tool_calls?.length) out.toolCalls = m.tool_calls.map((c) => ({ callId: c.id, name: c.function.name, arguments: c.function.arguments }));
        return out;
      }
      case 'tool':
        return { role: 'tool', content: contentOf(m.content, param, false).text, toolCallId: m.tool_call_id };
    }
  });
}

export const clientTools = (tools: ChatCompletionBody['tools']): ToolSpec[] | undefined =>
  tools?.length ? tools.map((t) => ({ name: t.function.name, description: t.function.description ?? '', parameters: t.function.parameters ?? { type: 'object', properties: {} } })) : undefined;
