// Every provider's attachment-to-content-part mapping (spec rules 6 and 7), plus the text forms the
// adapters share, so the forms stay side by side and consistent.
import type { ContentBlockParam } from '@anthropic-ai/sdk/resources/messages/messages';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions/completions';
import type { ResponseInputContent } from 'openai/resources/responses/responses';
import type { Attachment, ImageAttachment, TextAttachment } from '../base/types.ts';
import type { ProviderMessage } from './types.ts';

/** A text attachment as an explicit block (never a file reference), naming the file so the model can cite it. */
export function textAttachmentBlock(a: TextAttachment): string {
  const note = a.truncated ? ' [truncated: the file was cut to fit]' : '';
  return `Attached file ${a.filename} (${a.mimeType})${note}:\n${a.text}`;
}

/**
 * Tool-role transcript messages are stored logs of past tool calls; their matching call ids are not
 * part of the transcript, so every provider gets them as plain text instead of tool-result items
 * (which the APIs would reject without the originating call).
 */
export function toolMessageText(m: ProviderMessage): string {
  return `Tool result${m.name ? ` (${m.name})` : ''}:\n${m.content}`;
}

/** Only user messages carry attachments (rule 6); anything else on other roles is ignored. */
export function userAttachments(m: ProviderMessage): Attachment[] {
  return m.role === 'user' && m.attachments?.length ? m.attachments : [];
}

/** provider_a (Responses): `input_image` with a data URL string, `input_text` blocks. */
export function responsesParts(text: string, attachments: Attachment[]): ResponseInputContent[] {
  const parts: ResponseInputContent[] = [{ type: 'input_text', text }];
  for (const a of attachments) {
    parts.push(
      a.kind === 'image'
        ? { type: 'input_image', image_url: a.dataUrl, detail: 'auto' }
        : { type: 'input_text', text: textAttachmentBlock(a) },
    );
  }
  return parts;
}

/** provider_c / provider_d (Chat Completions): `image_url` parts and `text` parts. */
export function chatParts(text: string, attachments: Attachment[]): ChatCompletionContentPart[] {
  const parts: ChatCompletionContentPart[] = [{ type: 'text', text }];
  for (const a of attachments) {
    parts.push(
      a.kind === 'image'
        ? { type: 'image_url', image_url: { url: a.dataUrl, detail: 'auto' } }
        : { type: 'text', text: textAttachmentBlock(a) },
    );
  }
  return parts;
}

type MessagesImageType = 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
const MESSAGES_IMAGE_TYPES = new Set<string>(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Splits `data:<type>;base64,<data>`; the declared type wins over mimeType when it is one the API takes. */
function base64Image(a: ImageAttachment): { media_type: MessagesImageType; data: string } {
  const comma = a.dataUrl.indexOf(',');
  const header = comma >= 0 ? a.dataUrl.slice(0, comma) : '';
  const declared = /^data:([^;,]+)/i.exec(header)?.[1]?.toLowerCase();
  const type = declared && MESSAGES_IMAGE_TYPES.has(declared) ? declared : a.mimeType;
  return { media_type: type as MessagesImageType, data: comma >= 0 ? a.dataUrl.slice(comma + 1) : a.dataUrl };
}

/**
 * provider_b (Messages): base64 `image` blocks and `text` blocks. Attachments go before the message
 * text (the Messages API works best with images first). Empty and whitespace-only text blocks are left
 * out because the API rejects them (`text content blocks must contain non-whitespace text`).
 */
export function messagesBlocks(text: string, attachments: Attachment[]): ContentBlockParam[] {
  const blocks: ContentBlockParam[] = [];
  for (const a of attachments) {
    blocks.push(
      a.kind === 'image'
        ? { type: 'image', source: { type: 'base64', ...base64Image(a) } }
        : { type: 'text', text: textAttachmentBlock(a) },
    );
  }
  if (text.trim()) blocks.push({ type: 'text', text });
  return blocks;
}
