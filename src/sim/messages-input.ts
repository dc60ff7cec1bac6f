// Validates a Messages request like the real API (its pydantic-style messages) and normalizes it
// into the simulator's conversation model.
import { base64Bytes } from './attachments.ts';
import { isObject } from './http.ts';
import type { PromptBlock } from './prompt-cache.ts';
import type { AttachmentInfo, Conversation } from './script.ts';

export interface MessagesInput {
  invalid: false;
  model: string;
  conv: Conversation;
  stream: boolean;
  /** The prompt's blocks for the prompt cache (prompt-cache.ts). */
  blocks: PromptBlock[];
}

export interface MessagesInvalid {
  invalid: true;
  message: string;
}

const BLOCK_TYPES = [
  'text',
  'image',
  'document',
  'search_result',
  'tool_use',
  'tool_result',
  'thinking',
  'redacted_thinking',
  'server_tool_use',
  'web_search_tool_result',
];
const IMAGE_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

const bad = (message: string): MessagesInvalid => ({ invalid: true, message });

export function readMessagesRequest(body: unknown): MessagesInput | MessagesInvalid {
  if (!isObject(body)) return bad('Input should be a valid dictionary');
  for (const k of ['model', 'max_tokens', 'messages'] as const) {
    if (body[k] === undefined) return bad(`${k}: Field required`);
  }
  if (typeof body.model !== 'string') return bad('model: Input should be a valid string');
  if (!Number.isInteger(body.max_tokens)) return bad('max_tokens: Input should be a valid integer');
  if ((body.max_tokens as number) < 1) return bad('max_tokens: Input should be greater than or equal to 1');
  if (!Array.isArray(body.messages)) return bad('messages: Input should be a valid list');
  if (body.messages.length === 0) return bad('messages: at least one message is required');

  const conv: Conversation = { system: [], turns: [] };
  const blocks: PromptBlock[] = [];
  const sys = body.system;
  if (typeof sys === 'string') {
    if (sys !== '') conv.system.push(sys);
    blocks.push(promptBlock('system', { type: 'text', text: sys }));
  } else if (Array.isArray(sys)) {
    for (let i = 0; i < sys.length; i++) {
      const b = sys[i];
      if (!isObject(b) || b.type !== 'text' || typeof b.text !== 'string') {
        return bad(`system.${i}: Input should be a valid dictionary with type 'text'`);
      }
      const e = cacheControlError(b, `system.${i}`);
      if (e) return e;
      conv.system.push(b.text);
      blocks.push(promptBlock('system', b));
    }
  } else if (sys != null) {
    return bad('system: Input should be a valid string');
  }
  const err = readMessages(body.messages, conv, blocks);
  return err ?? { invalid: false, model: body.model, conv, stream: body.stream === true, blocks };
}

/** A block as the prompt cache sees it: its content (cache_control aside) and its size. */
function promptBlock(role: string, b: Record<string, unknown>): PromptBlock {
  const { cache_control, ...content } = b;
  const chars = typeof b.text === 'string' ? b.text.length : typeof b.content === 'string' ? b.content.length : 16;
  return { key: role + JSON.stringify(content), chars, marked: cache_control != null };
}

/** The API's one kind of cache_control: `{"type":"ephemeral"}`, with an optional `ttl`. */
function cacheControlError(b: Record<string, unknown>, at: string): MessagesInvalid | null {
  const cc = b.cache_control;
  if (cc == null) return null;
  if (!isObject(cc) || cc.type !== 'ephemeral') return bad(`${at}.cache_control.type: Input should be 'ephemeral'`);
  if (cc.ttl !== undefined && cc.ttl !== '5m' && cc.ttl !== '1h') return bad(`${at}.cache_control.ttl: Input should be '5m' or '1h'`);
  return null;
}

function readMessages(messages: unknown[], conv: Conversation, prompt: PromptBlock[]): MessagesInvalid | null {
  /** tool_use ids of the previous assistant message: the next user message must answer them all. */
  let pendingUse: string[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i];
    if (!isObject(m)) return bad(`messages.${i}: Input should be a valid dictionary`);
    if (m.role === 'system') {
      return bad(
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
      );
    }
    if (m.role !== 'user' && m.role !== 'assistant') return bad(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (m.content === undefined) return bad(`messages.${i}.content: Field required`);
    const blocks = typeof m.content === 'string' ? [{ type: 'text', text: m.content }] : m.content;
    if (!Array.isArray(blocks)) return bad(`messages.${i}.content: Input should be a valid string or list`);

    const texts: string[] = [];
    const parts: string[] = typeof m.content === 'string' ? ['string'] : [];
    const attachments: AttachmentInfo[] = [];
    const uses: string[] = [];
    const results: { id: string; output: string }[] = [];
    for (let j = 0; j < blocks.length; j++) {
      const b = blocks[j];
      const at = `messages.${i}.content.${j}`;
      if (!isObject(b)) return bad(`${at}: Input should be a valid dictionary`);
      if (typeof b.type !== 'string' || !BLOCK_TYPES.includes(b.type)) {
        return bad(
          `${at}: Input tag '${String(b.type)}' found using 'type' does not match any of the expected tags: ${BLOCK_TYPES.map((t) => `'${t}'`).join(', ')}`,
        );
      }
      if (typeof m.content !== 'string') parts.push(b.type);
      const e = cacheControlError(b, at) ?? readBlock(b, at, texts, attachments, uses, results);
      if (e) return e;
      prompt.push(promptBlock(m.role, b));
    }

    if (m.role === 'user') {
      const resultIds = results.map((r) => r.id);
      const unexpected = resultIds.filter((id) => !pendingUse.includes(id));
      if (unexpected.length) {
        return bad(
          `messages.${i}.content.0: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(', ')}. ` +
            'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
        );
      }
      const missing = pendingUse.filter((id) => !resultIds.includes(id));
      if (missing.length) return unanswered(i - 1, missing);
      for (const r of results) conv.turns.push({ kind: 'result', callId: r.id, output: r.output });
      // A user message made only of tool results is a tool round, not a new user turn.
      if (texts.length || attachments.length || results.length === 0) {
        conv.turns.push({ kind: 'user', text: texts.join('\n'), parts, attachments });
      }
      pendingUse = [];
    } else {
      if (pendingUse.length) return unanswered(i - 1, pendingUse);
      if (results.length) return bad(`messages.${i}.content: tool_result blocks can only be in user messages`);
      if (texts.length) conv.turns.push({ kind: 'assistant', text: texts.join('\n') });
      if (uses.length) conv.turns.push({ kind: 'calls', callIds: uses });
      pendingUse = uses;
    }
  }
  return pendingUse.length ? unanswered(messages.length - 1, pendingUse) : null;
}

function unanswered(i: number, ids: string[]): MessagesInvalid {
  return bad(
    `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${ids.join(', ')}. ` +
      'Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
  );
}

function readBlock(
  b: Record<string, unknown>,
  at: string,
  texts: string[],
  attachments: AttachmentInfo[],
  uses: string[],
  results: { id: string; output: string }[],
): MessagesInvalid | null {
  switch (b.type) {
    case 'text':
      if (typeof b.text !== 'string') return bad(`${at}.text.text: Field required`);
      texts.push(b.text);
      return null;
    case 'image':
    case 'document': {
      const src = b.source;
      if (!isObject(src)) return bad(`${at}.${b.type}.source: Field required`);
      if (src.type === 'base64') {
        if (b.type === 'image' && !IMAGE_TYPES.includes(src.media_type as string)) {
          return bad(`${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`);
        }
        if (typeof src.data !== 'string' || src.data.startsWith('data:') || !/^[A-Za-z0-9+/=\s]*$/.test(src.data)) {
          return bad(`${at}.${b.type}.source.base64.data: The ${b.type} data is not valid base64`);
        }
        attachments.push({ type: b.type, mediaType: src.media_type as string, bytes: base64Bytes(src.data) });
      } else if (src.type === 'url' && typeof src.url === 'string') {
        attachments.push({ type: b.type, url: src.url });
      } else if (src.type === 'text' && typeof src.data === 'string') {
        attachments.push({ type: b.type, mediaType: 'text/plain', bytes: Buffer.byteLength(src.data) });
      } else {
        return bad(`${at}.${b.type}.source: Input tag '${String(src.type)}' found using 'type' does not match any of the expected tags: 'base64', 'url'`);
      }
      return null;
    }
    case 'tool_use':
      if (typeof b.id !== 'string') return bad(`${at}.tool_use.id: Field required`);
      if (typeof b.name !== 'string') return bad(`${at}.tool_use.name: Field required`);
      if (!isObject(b.input)) return bad(`${at}.tool_use.input: Input should be a valid dictionary`);
      uses.push(b.id);
      return null;
    case 'tool_result': {
      if (typeof b.tool_use_id !== 'string') return bad(`${at}.tool_result.tool_use_id: Field required`);
      const c = b.content;
      const output =
        typeof c === 'string'
          ? c
          : Array.isArray(c)
            ? c.map((x) => (isObject(x) && typeof x.text === 'string' ? x.text : '')).join('')
            : '';
      results.push({ id: b.tool_use_id, output });
      return null;
    }
    default:
      return null;
  }
}
