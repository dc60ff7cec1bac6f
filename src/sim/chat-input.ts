// Validates a Chat Completions request like the real API (same messages, params and codes) and
// normalizes it into the simulator's conversation model.
import { describeUrl } from './attachments.ts';
import { isObject } from './http.ts';
import type { AttachmentInfo, Conversation, Turn } from './script.ts';

export interface ChatInvalid {
  invalid: true;
  message: string;
  param: string | null;
  code: string | null;
}

export interface ChatInput {
  invalid: false;
  model: string;
  conv: Conversation;
  stream: boolean;
  includeUsage: boolean;
}

const ROLES = ['system', 'assistant', 'user', 'function', 'tool', 'developer'];
const PART_TYPES = ['text', 'image_url', 'input_audio', 'refusal', 'audio', 'file'];

function bad(message: string, param: string | null, code: string | null = null): ChatInvalid {
  return { invalid: true, message, param, code };
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

function invalidType(param: string, expected: string, v: unknown): ChatInvalid {
  return bad(`Invalid type for '${param}': expected ${expected}, but got ${kind(v)} instead.`, param, 'invalid_type');
}

function missing(param: string): ChatInvalid {
  return bad(`Missing required parameter: '${param}'.`, param, 'missing_required_parameter');
}

function listOf(values: string[]): string {
  const q = values.map((v) => `'${v}'`);
  return `${q.slice(0, -1).join(', ')}, and ${q[q.length - 1]}`;
}

export function readChatRequest(body: unknown): ChatInput | ChatInvalid {
  if (!isObject(body)) return bad('Invalid body: expected a JSON object.', null);
  if (body.model === undefined || body.model === null || body.model === '') {
    return bad('you must provide a model parameter', null);
  }
  if (typeof body.model !== 'string') return invalidType('model', 'a string', body.model);
  if (body.messages === undefined) return missing('messages');
  if (!Array.isArray(body.messages)) return invalidType('messages', 'an array', body.messages);
  if (body.messages.length === 0) {
    return bad(
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      'messages',
      'empty_array',
    );
  }
  if (body.stream_options != null && body.stream !== true) {
    return bad("The 'stream_options' parameter is only allowed when 'stream' is enabled.", 'stream_options', null);
  }
  const toolsErr = checkTools(body.tools);
  if (toolsErr) return toolsErr;

  const conv: Conversation = { system: [], turns: [] };
  const err = readMessages(body.messages, conv);
  if (err) return err;
  const so = body.stream_options;
  return {
    invalid: false,
    model: body.model,
    conv,
    stream: body.stream === true,
    includeUsage: isObject(so) && so.include_usage === true,
  };
}

function checkTools(tools: unknown): ChatInvalid | null {
  if (tools == null) return null;
  if (!Array.isArray(tools)) return invalidType('tools', 'an array', tools);
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i];
    if (!isObject(t)) return invalidType(`tools[${i}]`, 'an object', t);
    // The flat Responses shape sent here is a classic porting bug; the real API rejects it.
    if (!isObject(t.function)) return missing(`tools[${i}].function`);
    if (typeof t.function.name !== 'string') return missing(`tools[${i}].function.name`);
  }
  return null;
}

function readMessages(messages: unknown[], conv: Conversation): ChatInvalid | null {
  /** call ids of the latest assistant tool_calls still waiting for tool messages, and where. */
  let pending = new Set<string>();
  let pendingAt = -1;
  const unanswered = (): ChatInvalid =>
    bad(
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. " +
        `The following tool_call_ids did not have response messages: ${[...pending].join(', ')}`,
      `messages.[${pendingAt}].role`,
    );
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    const at = `messages[${i}]`;
    if (!isObject(m)) return invalidType(at, 'an object', m);
    if (m.role === undefined) return missing(`${at}.role`);
    if (typeof m.role !== 'string' || !ROLES.includes(m.role)) {
      return bad(`Invalid value: '${String(m.role)}'. Supported values are: ${listOf(ROLES)}.`, `${at}.role`, 'invalid_value');
    }
    if (m.role !== 'tool' && pending.size > 0) return unanswered();
    const read = readContent(m, at);
    if ('invalid' in read) return read;
    if (m.role === 'system' || m.role === 'developer') {
      conv.system.push(read.text);
    } else if (m.role === 'user') {
      conv.turns.push({ kind: 'user', text: read.text, parts: read.parts, attachments: read.attachments });
    } else if (m.role === 'assistant') {
      if (read.text) conv.turns.push({ kind: 'assistant', text: read.text });
      if (m.tool_calls != null) {
        const calls = readToolCalls(m.tool_calls, at);
        if (!Array.isArray(calls)) return calls;
        if (calls.length) {
          conv.turns.push({ kind: 'calls', callIds: calls });
          pending = new Set(calls);
          pendingAt = i;
        }
      }
    } else if (m.role === 'tool') {
      if (typeof m.tool_call_id !== 'string') return missing(`${at}.tool_call_id`);
      if (!pending.has(m.tool_call_id)) {
        return bad(
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          `messages.[${i}].role`,
        );
      }
      pending.delete(m.tool_call_id);
      conv.turns.push({ kind: 'result', callId: m.tool_call_id, output: read.text } satisfies Turn);
    }
  }
  return pending.size > 0 ? unanswered() : null;
}

function readToolCalls(v: unknown, at: string): string[] | ChatInvalid {
  if (!Array.isArray(v)) return invalidType(`${at}.tool_calls`, 'an array', v);
  const ids: string[] = [];
  for (let k = 0; k < v.length; k++) {
    const c = v[k];
    const cat = `${at}.tool_calls[${k}]`;
    if (!isObject(c)) return invalidType(cat, 'an object', c);
    if (typeof c.id !== 'string') return missing(`${cat}.id`);
    if (!isObject(c.function)) return missing(`${cat}.function`);
    if (typeof c.function.name !== 'string') return missing(`${cat}.function.name`);
    if (typeof c.function.arguments !== 'string') return missing(`${cat}.function.arguments`);
    ids.push(c.id);
  }
  return ids;
}

interface Content {
  text: string;
  parts: string[];
  attachments: AttachmentInfo[];
}

function readContent(m: Record<string, unknown>, at: string): Content | ChatInvalid {
  const c = m.content;
  const out: Content = { text: '', parts: [], attachments: [] };
  if (c === undefined || c === null) {
    if (m.role === 'assistant') return out;
    return missing(`${at}.content`);
  }
  if (typeof c === 'string') {
    out.text = c;
    out.parts.push('string');
    return out;
  }
  if (!Array.isArray(c)) return invalidType(`${at}.content`, 'a string or an array', c);
  const texts: string[] = [];
  for (let j = 0; j < c.length; j++) {
    const p = c[j];
    const pat = `${at}.content[${j}]`;
    if (!isObject(p)) return invalidType(pat, 'an object', p);
    if (typeof p.type !== 'string' || !PART_TYPES.includes(p.type)) {
      return bad(`Invalid value: '${String(p.type)}'. Supported values are: ${listOf(PART_TYPES)}.`, `${pat}.type`, 'invalid_value');
    }
    if (m.role !== 'user' && p.type !== 'text' && !(m.role === 'assistant' && p.type === 'refusal')) {
      return bad(`Invalid value: '${p.type}'. Supported values are: 'text'.`, `${pat}.type`, 'invalid_value');
    }
    out.parts.push(p.type);
    if (p.type === 'text') {
      if (typeof p.text !== 'string') return missing(`${pat}.text`);
      texts.push(p.text);
    } else if (p.type === 'image_url') {
      if (!isObject(p.image_url)) return invalidType(`${pat}.image_url`, 'an object', p.image_url);
      if (typeof p.image_url.url !== 'string') return missing(`${pat}.image_url.url`);
      out.attachments.push(describeUrl('image_url', p.image_url.url));
    } else if (p.type === 'file') {
      if (!isObject(p.file)) return invalidType(`${pat}.file`, 'an object', p.file);
      const f = p.file;
      const filename = typeof f.filename === 'string' ? f.filename : undefined;
      if (typeof f.file_data === 'string') out.attachments.push(describeUrl('file', f.file_data, filename));
      else if (typeof f.file_id === 'string') out.attachments.push({ type: 'file', url: `file:${f.file_id}` });
      else return missing(`${pat}.file.file_data`);
    } else if (p.type === 'input_audio') {
      out.attachments.push({ type: 'input_audio' });
    }
  }
  out.text = texts.join('\n');
  return out;
}
