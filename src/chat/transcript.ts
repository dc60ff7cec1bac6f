// Turning a client's supplied history into the messages stored and the messages the provider sees
// (which of them are new to a stored transcript is decided by the start's statement:
// sql/012_start_in_one_statement.sql).
import type { ProviderMessage } from '../providers/types.ts';
import type { InputMessage, RunMessage } from '../domain/schemas.ts';
import type { NewMessage } from '../store/messages.ts';

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
export function toProviderMessages(systemPrompt: string | null, supplied: RunMessage[]): ProviderMessage[] {
  const out: ProviderMessage[] = [];
  if (systemPrompt) out.push({ role: 'system', content: systemPrompt });
  for (const m of supplied) {
    const message: ProviderMessage = { role: m.role, content: m.content, name: m.name ?? null, attachments: m.attachments };
    if (m.toolCalls) message.toolCalls = m.toolCalls;
    if (m.toolCallId !== undefined) message.toolCallId = m.toolCallId;
    out.push(message);
  }
  return out;
}
