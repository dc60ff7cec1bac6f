// Request bodies of the spec's endpoints, as zod schemas. Field names are the spec's.
import { z } from 'zod';
import { attachmentsSchema } from '../base/attachments.ts';
import { PROVIDERS } from '../providers/types.ts';

export const providerSchema = z.enum(PROVIDERS);
export const roleSchema = z.enum(['system', 'user', 'assistant', 'tool']);
const id = z.string().min(1, 'must not be empty');

export const inputMessageSchema = z.object({
  role: roleSchema,
  content: z.string(),
  name: z.string().nullish(),
  attachments: attachmentsSchema.optional(),
});
export type InputMessage = z.infer<typeof inputMessageSchema>;

/**
 * A message of a run's history. The OpenAI-compatible API's clients also send their function calls and
 * the results of them (src/openai/): never the spec's body, which has no such fields.
 */
export type RunMessage = InputMessage & {
  toolCalls?: Array<{ callId: string; name: string; arguments: string }>;
  toolCallId?: string;
};

const completionFields = {
  chatId: id.optional(),
  provider: providerSchema,
  model: z.string().trim().min(1, 'must not be empty'),
  messages: z.array(inputMessageSchema).min(1, 'must contain at least one message'),
  additionalSystemPrompt: z.string().nullish(),
  enabledTools: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(2).optional(),
  maxTokens: z.number().int().positive().optional(),
};

function attachmentsOnUserMessages(body: { messages: InputMessage[] }, ctx: z.RefinementCtx) {
  body.messages.forEach((m, i) => {
    if (m.role !== 'user' && m.attachments && m.attachments.length > 0) {
      ctx.addIssue({ code: 'custom', message: 'attachments are only allowed on user messages', path: ['messages', i, 'attachments'] });
    }
  });
}

export const completionSchema = z.object(completionFields).superRefine(attachmentsOnUserMessages);
export type CompletionBody = z.infer<typeof completionSchema>;

export const streamCompletionSchema = z
  .object({ ...completionFields, persist: z.boolean().default(true) })
  .superRefine(attachmentsOnUserMessages)
  .superRefine((b, ctx) => {
    if (!b.persist && b.chatId !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'chatId must be omitted when persist is false', path: ['chatId'] });
    }
  });
export type StreamCompletionBody = z.infer<typeof streamCompletionSchema>;

export const createChatSchema = z
  .object({
    title: z.string().optional(),
    provider: providerSchema.optional(),
    model: z.string().trim().min(1, 'must not be empty').optional(),
    additionalSystemPrompt: z.string().nullish(),
    enabledTools: z.array(z.string()).optional(),
    messages: z.array(inputMessageSchema).optional(),
  })
  .superRefine((b, ctx) => {
    if ((b.provider === undefined) !== (b.model === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'provider and model must be supplied together', path: [b.provider ? 'model' : 'provider'] });
    }
    b.messages?.forEach((m, i) => {
      if (m.role === 'tool' && m.attachments && m.attachments.length > 0) {
        ctx.addIssue({ code: 'custom', message: 'tool messages cannot carry attachments', path: ['messages', i, 'attachments'] });
      }
    });
  });

export const patchChatSchema = z.object({
  title: z.string().trim().min(1, 'must not be blank').optional(),
  additionalSystemPrompt: z.string().nullable().optional(),
  enabledTools: z.array(z.string()).optional(),
});

export const starSchema = z.object({ starred: z.boolean({ error: 'must be a boolean' }) });

export const suggestTitleSchema = z.object({ chatId: id, content: z.string() });

export const appendMessageSchema = z
  .object({
    role: roleSchema,
    content: z.string(),
    name: z.string().nullish(),
    metadata: z.record(z.string(), z.unknown()).nullish(),
    attachments: attachmentsSchema.optional(),
  })
  .superRefine((b, ctx) => {
    if (b.role === 'tool' && b.attachments && b.attachments.length > 0) {
      ctx.addIssue({ code: 'custom', message: 'tool messages cannot carry attachments', path: ['attachments'] });
    }
    // Attachments are merged into metadata.attachments (the spec): anything else there would be lost.
    const into = b.metadata?.attachments;
    if (b.attachments && b.attachments.length > 0 && into !== undefined && !Array.isArray(into)) {
      ctx.addIssue({ code: 'custom', message: 'must be an array to merge attachments into', path: ['metadata', 'attachments'] });
    }
  });

export const createSearchSchema = z.object({
  title: z.string().optional(),
  query: z.string().optional(),
  reuseByQuery: z.boolean().default(false),
});

export const searchRunSchema = z.object({
  query: z.string().trim().min(1, 'must not be blank').optional(),
  title: z.string().trim().min(1, 'must not be blank').optional(),
  type: z.enum(['auto', 'fast', 'deep', 'instant']).optional(),
  numResults: z.number().int().min(1).max(100).optional(),
  includeDomains: z.array(z.string().min(1)).optional(),
  excludeDomains: z.array(z.string().min(1)).optional(),
});
export type SearchRunBody = z.infer<typeof searchRunSchema>;

export const searchChatSchema = z.object({ title: z.string().trim().min(1, 'must not be blank').optional() });

/**
 * Every request body schema by name: a big body is checked in a worker thread (src/http/body-pool.ts),
 * which gets the schema's name, not the schema. A schema missing here is still checked, on the event loop.
 */
export const BODY_SCHEMAS = {
  completion: completionSchema,
  streamCompletion: streamCompletionSchema,
  createChat: createChatSchema,
  patchChat: patchChatSchema,
  star: starSchema,
  suggestTitle: suggestTitleSchema,
  appendMessage: appendMessageSchema,
  createSearch: createSearchSchema,
  searchRun: searchRunSchema,
  searchChat: searchChatSchema,
} as const;
export type BodySchemaName = keyof typeof BODY_SCHEMAS;

/** Normalizes an optional prompt: trimmed, blank → null. */
export function normalizePrompt(p: string | null | undefined): string | null {
  if (p === undefined || p === null) return null;
  const t = p.trim();
  return t === '' ? null : t;
}
