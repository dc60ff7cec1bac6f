// A Responses request body (wire-formats.md §1, served) and its translation into a run's new messages,
// client functions and service tools. Unknown fields are ignored.
import { z } from 'zod';
import { topPSchema } from './sampling.ts';
import type { ToolSpec } from '../providers/types.ts';
import type { RunMessage } from '../domain/schemas.ts';
import { contentOf } from './chat-request.ts';
import { invalidParam } from './errors.ts';
import type { ResponseRequest } from './store.ts';

const part = z.object({ type: z.string() }).loose();
const messageItem = z.object({
  type: z.literal('message').optional(),
  role: z.enum(['user', 'assistant', 'system', 'developer']),
  content: z.union([z.string(), z.array(part)]),
});
const callItem = z.object({ type: z.literal('function_call'), call_id: z.string().min(1), name: z.string().min(1), arguments: z.string() });
const outputItem = z.object({ type: z.literal('function_call_output'), call_id: z.string().min(1), output: z.union([z.string(), z.array(part)]) });
const otherItem = z.object({ type: z.string() }).loose();
const item = z.union([messageItem, callItem, outputItem, otherItem]);

const functionTool = z.object({
  type: z.literal('function'),
  name: z.string().min(1),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
});
const tool = z.union([functionTool, z.object({ type: z.string() }).loose()]);

export const createResponseSchema = z.object({
  model: z.string().min(1, 'must not be empty'),
  input: z.union([z.string(), z.array(item)]),
  instructions: z.string().nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: z.unknown().optional(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: topPSchema,
  previous_response_id: z.string().min(1).nullish(),
  store: z.boolean().nullish(),
  background: z.boolean().nullish(),
  stream: z.boolean().nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
  /** Extension: the service's tools (web_search, fetch_url, …) this request may use. */
  service_tools: z.array(z.string()).nullish(),
});
export type CreateResponseBody = z.infer<typeof createResponseSchema>;

/** The request's new messages: its input items, function calls folded into the assistant turn before their results. */
export function inputMessages(body: CreateResponseBody): RunMessage[] {
  if (typeof body.input === 'string') return [{ role: 'user', content: body.input }];
  const out: RunMessage[] = [];
  body.input.forEach((it, i) => {
    const param = `input[${i}]`;
    if (it.type === 'function_call') {
      const c = it as z.infer<typeof callItem>;
      const last = out.at(-1);
      const turn = last?.role === 'assistant' ? last : (out[out.push({ role: 'assistant', content: '' }) - 1] as RunMessage);
      (turn.toolCalls ??= []).push({ callId: c.call_id, name: c.name, arguments: c.arguments });
    } else if (it.type === 'function_call_output') {
      const o = it as z.infer<typeof outputItem>;
      const text = typeof o.output === 'string' ? o.output : contentOf(o.output as never, `${param}.output`, false).text;
      out.push({ role: 'tool', content: text, toolCallId: o.call_id });
    } else if ('role' in it) {
      const m = it as z.infer<typeof messageItem>;
      const { text, attachments } = contentOf(m.content as never, `${param}.content`, m.role === 'user');
      const role = m.role === 'developer' ? 'system' : m.role;
      out.push(attachments.length ? { role, content: text, attachments } : { role, content: text });
    } else if (it.type !== 'reasoning') {
      throw invalidParam(param, `${param}: input item type '${it.type}' is not supported here`);
    }
  });
  if (out.length === 0) throw invalidParam('input', 'input must hold at least one message or function_call_output');
  return out;
}

/** Client functions, and the service tools the request turns on (`web_search`, `service_tools`). */
export function toolsOf(body: CreateResponseBody): { clientTools?: ToolSpec[]; serviceTools: string[] } {
  const clientTools: ToolSpec[] = [];
  const serviceTools = new Set(body.service_tools ?? []);
  for (const t of body.tools ?? []) {
    if (t.type === 'function') {
      const f = t as z.infer<typeof functionTool>;
      clientTools.push({ name: f.name, description: f.description ?? '', parameters: f.parameters ?? { type: 'object', properties: {} } });
    } else if (t.type === 'web_search' || t.type === 'web_search_preview') {
      serviceTools.add('web_search');
    }
  }
  return { ...(clientTools.length && { clientTools }), serviceTools: [...serviceTools] };
}

export function requestEcho(body: CreateResponseBody, model: string): ResponseRequest {
  return {
    model,
    instructions: body.instructions ?? null,
    metadata: body.metadata ?? null,
    tools: body.tools ?? [],
    tool_choice: body.tool_choice ?? 'auto',
    temperature: body.temperature ?? null,
    top_p: body.top_p ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    background: body.background === true,
  };
}
