// Turning a client's supplied history into (a) the messages that are new to the stored transcript
// and (b) the messages the provider sees.
import type { ProviderMessage } from '../providers/types.ts';
import type { InputMessage } from '../schemas.ts';
import type { Message } from '../types.ts';
import type { NewMessage } from '../store/messages.ts';

const isToolLog = (m: Message) => m.role === 'tool' && m.metadata?.kind === 'tool_call';

/**
 * The supplied non-assistant messages that are not yet stored. Clients send the whole history
 * each time; each supplied message is matched, in order, against the stored transcript (role and
 * content), skipping stored messages the client left out (hidden system messages, tool logs).
 * What does not match is new. Assistant messages are never taken from the client.
 */
export function newInputMessages(stored: Message[], supplied: InputMessage[]): InputMessage[] {
  const candidates = stored.filter((m) => m.role !== 'assistant' && !isToolLog(m));
  const fresh: InputMessage[] = [];
  let next = 0;
  for (const m of supplied) {
    if (m.role === 'assistant') continue;
    let found = -1;
    for (let k = next; k < candidates.length; k++) {
      if (candidates[k]!.role === m.role && candidates[k]!.content === m.content) {
        found = k;
        break;
      }
    }
    if (found === -1) fresh.push(m);
    else next = found + 1;
  }
  return fresh;
}

/** The stored form of an input message: attachments go to `metadata.attachments`. */
export function toStoredMessage(m: InputMessage): NewMessage {
  return {
    role: m.role,
    content: m.content,
    name: m.name ?? null,
    metadata: m.attachments && m.attachments.length > 0 ? { attachments: m.attachments } : null,
  };
}

/** The provider's view: the additional system prompt first, then the supplied history. */
export function toProviderMessages(systemPrompt: string | null, supplied: InputMessage[]): ProviderMessage[] {
  const out: ProviderMessage[] = [];
  if (systemPrompt) out.push({ role: 'system', content: systemPrompt });
  for (const m of supplied) out.push({ role: m.role, content: m.content, name: m.name ?? null, attachments: m.attachments });
  return out;
}
