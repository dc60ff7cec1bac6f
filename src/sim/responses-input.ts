// Validates a Responses request the way the real API does (same messages, params and codes) and
// normalizes it, including the conversation inherited through previous_response_id.
import { describeUrl } from './attachments.ts';
import { isObject } from './http.ts';
import type { AttachmentInfo, Turn } from './script.ts';
import type { SimState, StoredResponse } from './state.ts';

export interface Invalid {
  invalid: true;
  message: string;
  param: string | null;
  code: string | null;
}

export interface ResponsesInput {
  invalid: false;
  model: string;
  /** The full conversation: inherited turns followed by this request's input. */
  turns: Turn[];
  /** instructions (this request only: not inherited) + system/developer messages of the conversation. */
  system: string[];
  /** system/developer message texts of the conversation, inherited by later responses. */
  inheritedSystem: string[];
  stream: boolean;
  store: boolean;
  previousResponseId: string | null;
}

const ROLES = ['user', 'assistant', 'system', 'developer'];
const PART_TYPES = ['input_text', 'input_image', 'input_file', 'output_text', 'refusal'];
const ITEM_TYPES = ['message', 'function_call', 'function_call_output', 'reasoning', 'item_reference'];
/** Ids this simulator issues for function calls: `fc_<response suffix>_<n>`. */
const OUR_FC = /^fc_([0-9a-f]{16})_\d+$/;

function bad(message: string, param: string | null, code: string | null): Invalid {
  return { invalid: true, message, param, code };
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

function invalidType(param: string, expected: string, v: unknown): Invalid {
  return bad(
    `Invalid type for '${param}': expected ${expected}, but got ${typeName(v)} instead.`,
    param,
    'invalid_type',
  );
}

function supported(values: string[]): string {
  const q = values.map((v) => `'${v}'`);
  return q.length > 1 ? `${q.slice(0, -1).join(', ')}, and ${q[q.length - 1]}` : q.join('');
}

export function readResponsesRequest(body: unknown, state: SimState): ResponsesInput | Invalid {
  if (!isObject(body)) return bad('Invalid body: expected a JSON object.', null, null);
  if (body.model === undefined || body.model === null) {
    return bad("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
  }
  if (typeof body.model !== 'string') return invalidType('model', 'a string', body.model);
  if (body.input === undefined) {
    return bad("Missing required parameter: 'input'.", 'input', 'missing_required_parameter');
  }
  if (body.instructions != null && typeof body.instructions !== 'string') {
    return invalidType('instructions', 'a string', body.instructions);
  }
  const toolsError = checkTools(body.tools);
  if (toolsError) return toolsError;

  let prev: StoredResponse | null = null;
  const prevId = body.previous_response_id;
  if (prevId != null) {
    if (typeof prevId !== 'string') return invalidType('previous_response_id', 'a string', prevId);
    prev = state.responses.get(prevId) ?? null;
    if (!prev) {
      return bad(
        `Previous response with id '${prevId}' not found.`,
        'previous_response_id',
        'previous_response_not_found',
      );
    }
  }

  const inheritedSystem = prev ? [...prev.system] : [];
  const turns: Turn[] = prev ? [...prev.turns] : [];
  const answered = new Set<string>();
  if (typeof body.input === 'string') {
    turns.push({ kind: 'user', text: body.input, parts: ['string'], attachments: [] });
  } else if (Array.isArray(body.input)) {
    if (body.input.length === 0 && !prev) {
      return bad(
        "Invalid 'input': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        'input',
        'empty_array',
      );
    }
    const err = readItems(body.input, prev, turns, inheritedSystem, answered);
    if (err) return err;
  } else {
    return invalidType('input', 'a string or an array', body.input);
  }
  for (const id of prev?.pendingCalls ?? []) {
    if (!answered.has(id)) return bad(`No tool output found for function call ${id}.`, 'input', null);
  }

  const system = typeof body.instructions === 'string' && body.instructions !== '' ? [body.instructions] : [];
  return {
    invalid: false,
    model: body.model,
    turns,
    system: [...system, ...inheritedSystem],
    inheritedSystem,
    stream: body.stream === true,
    store: body.store !== false,
    previousResponseId: typeof prevId === 'string' ? prevId : null,
  };
}

function checkTools(tools: unknown): Invalid | null {
  if (tools === undefined || tools === null) return null;
  if (!Array.isArray(tools)) return invalidType('tools', 'an array', tools);
  for (let i = 0; i < tools.length; i++) {
    const t = tools[i];
    if (!isObject(t)) return invalidType(`tools[${i}]`, 'an object', t);
    if (t.type === 'function') {
      if (typeof t.name !== 'string' || t.name === '') {
        return bad(`Missing required parameter: 'tools[${i}].name'.`, `tools[${i}].name`, 'missing_required_parameter');
      }
      if (isObject(t.function)) {
        // The Chat Completions nesting is a classic porting bug; the real API rejects it too.
        return bad(`Unknown parameter: 'tools[${i}].function'.`, `tools[${i}].function`, 'unknown_parameter');
      }
    }
  }
  return null;
}

function readItems(
  items: unknown[],
  prev: StoredResponse | null,
  turns: Turn[],
  system: string[],
  answered: Set<string>,
): Invalid | null {
  const knownCalls = new Set(prev?.pendingCalls ?? []);
  const reasoningSeen = new Set<string>();
  for (let i = 0; i < items.length; i++) {
    const it = items[i];
    const at = `input[${i}]`;
    if (!isObject(it)) return invalidType(at, 'an object', it);
    const type = it.type ?? 'message';
    if (typeof type !== 'string' || !ITEM_TYPES.includes(type)) {
      return bad(`Invalid value: '${String(type)}'. Supported values are: ${supported(ITEM_TYPES)}.`, `${at}.type`, 'invalid_value');
    }
    if (type === 'message') {
      const err = readMessage(it, at, turns, system);
      if (err) return err;
    } else if (type === 'reasoning') {
      if (typeof it.id === 'string') reasoningSeen.add(it.id);
    } else if (type === 'function_call') {
      for (const k of ['call_id', 'name', 'arguments'] as const) {
        if (typeof it[k] !== 'string') {
          return bad(`Missing required parameter: '${at}.${k}'.`, `${at}.${k}`, 'missing_required_parameter');
        }
      }
      const m = typeof it.id === 'string' ? OUR_FC.exec(it.id) : null;
      if (m && !reasoningSeen.has(`rs_${m[1]}`)) {
        return bad(
          `Item '${it.id as string}' of type 'function_call' was provided without its required 'reasoning' item: 'rs_${m[1]}'.`,
          'input',
          null,
        );
      }
      knownCalls.add(it.call_id as string);
      turns.push({ kind: 'calls', callIds: [it.call_id as string] });
    } else if (type === 'function_call_output') {
      if (typeof it.call_id !== 'string') {
        return bad(`Missing required parameter: '${at}.call_id'.`, `${at}.call_id`, 'missing_required_parameter');
      }
      if (it.output === undefined) {
        return bad(`Missing required parameter: '${at}.output'.`, `${at}.output`, 'missing_required_parameter');
      }
      if (!knownCalls.has(it.call_id)) {
        return bad(`No tool call found for function call output with call_id ${it.call_id}.`, 'input', null);
      }
      answered.add(it.call_id);
      turns.push({ kind: 'result', callId: it.call_id, output: outputText(it.output) });
    }
  }
  return null;
}

function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) {
    return output.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('');
  }
  return JSON.stringify(output);
}

function readMessage(it: Record<string, unknown>, at: string, turns: Turn[], system: string[]): Invalid | null {
  const role = it.role;
  if (role === undefined) return bad(`Missing required parameter: '${at}.role'.`, `${at}.role`, 'missing_required_parameter');
  if (typeof role !== 'string' || !ROLES.includes(role)) {
    return bad(`Invalid value: '${String(role)}'. Supported values are: ${supported(ROLES)}.`, `${at}.role`, 'invalid_value');
  }
  const content = it.content;
  const texts: string[] = [];
  const parts: string[] = [];
  const attachments: AttachmentInfo[] = [];
  if (typeof content === 'string') {
    texts.push(content);
    parts.push('string');
  } else if (Array.isArray(content)) {
    for (let j = 0; j < content.length; j++) {
      const p = content[j];
      const pat = `${at}.content[${j}]`;
      if (!isObject(p)) return invalidType(pat, 'an object', p);
      if (typeof p.type !== 'string' || !PART_TYPES.includes(p.type)) {
        return bad(`Invalid value: '${String(p.type)}'. Supported values are: ${supported(PART_TYPES)}.`, `${pat}.type`, 'invalid_value');
      }
      parts.push(p.type);
      if (p.type === 'input_text' || p.type === 'output_text') {
        if (typeof p.text !== 'string') return invalidType(`${pat}.text`, 'a string', p.text);
        texts.push(p.text);
      } else if (p.type === 'input_image') {
        if (p.image_url !== undefined && p.image_url !== null && typeof p.image_url !== 'string') {
          return invalidType(`${pat}.image_url`, 'a string', p.image_url);
        }
        if (typeof p.image_url !== 'string' && typeof p.file_id !== 'string') {
          return bad(`Missing required parameter: '${pat}.image_url'.`, `${pat}.image_url`, 'missing_required_parameter');
        }
        attachments.push(
          typeof p.image_url === 'string' ? describeUrl('input_image', p.image_url) : { type: 'input_image', url: `file:${p.file_id as string}` },
        );
      } else if (p.type === 'input_file') {
        const filename = typeof p.filename === 'string' ? p.filename : undefined;
        if (typeof p.file_data === 'string') attachments.push(describeUrl('input_file', p.file_data, filename));
        else if (typeof p.file_url === 'string') attachments.push(describeUrl('input_file', p.file_url, filename));
        else if (typeof p.file_id === 'string') attachments.push({ type: 'input_file', url: `file:${p.file_id}` });
        else return bad(`Missing required parameter: '${pat}.file_data'.`, `${pat}.file_data`, 'missing_required_parameter');
      }
    }
  } else {
    return invalidType(`${at}.content`, 'a string or an array', content);
  }
  const text = texts.join('\n');
  if (role === 'user') turns.push({ kind: 'user', text, parts, attachments });
  else if (role === 'assistant') turns.push({ kind: 'assistant', text });
  else system.push(text);
  return null;
}
