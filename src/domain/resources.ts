// The service's own resources as values: the zod schemas of what it stores and answers (a chat, a
// search and its results, a run's usage). The run codecs (actors/results.ts) decode results with them
// and the OpenAPI document (src/openapi/resources.ts) names them as its components: the domain's words,
// which the API's brochure borrows, not the other way round. Each `satisfies` the TypeScript type the
// code returns, so a field added to a type and not here fails the typecheck.
import { z } from 'zod';
import { providerSchema } from './schemas.ts';
import type { AnswerCitation, ChatSummary, SearchDetail, SearchResultItem, SearchSummary } from '../base/types.ts';

export const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601, UTC, with milliseconds' });
export const nullableString = z.string().nullable();

/** A chat's own fields: its summary, and the base of its detail and of its workspace and history items. */
export const chatFields = {
  id: z.string(),
  title: nullableString,
  createdAt: timestamp,
  updatedAt: timestamp,
  starred: z.boolean(),
  starredAt: timestamp.nullable(),
  initiatedProvider: providerSchema.nullable(),
  initiatedModel: nullableString,
  lastUsedProvider: providerSchema.nullable(),
  lastUsedModel: nullableString,
  additionalSystemPrompt: nullableString,
  enabledTools: z.array(z.string()),
};
export const chatSummary = z.object(chatFields) satisfies z.ZodType<ChatSummary>;

/** A search's own fields, as chatFields are a chat's. */
export const searchFields = {
  id: z.string(),
  title: nullableString,
  query: nullableString,
  createdAt: timestamp,
  updatedAt: timestamp,
  starred: z.boolean(),
  starredAt: timestamp.nullable(),
};
export const searchSummary = z.object(searchFields) satisfies z.ZodType<SearchSummary>;

export const searchResultItem = z.object({
  url: z.string(),
  title: nullableString,
  snippet: nullableString,
  summary: nullableString,
  publishedDate: nullableString,
  author: nullableString,
  score: z.number().nullable(),
  favicon: nullableString,
  image: nullableString,
}) satisfies z.ZodType<SearchResultItem>;

export const answerCitation = z.object({
  url: z.string(),
  title: nullableString,
  author: nullableString,
  publishedDate: nullableString,
  text: nullableString,
}) satisfies z.ZodType<AnswerCitation>;

export const searchDetail = z.object({
  ...searchFields,
  title: z.string(),
  query: z.string(),
  requestId: z.string(),
  latencyMs: z.number().int(),
  error: nullableString,
  answerText: nullableString,
  answerRequestId: nullableString,
  answerCitations: z.array(answerCitation),
  answerError: nullableString,
  results: z.array(searchResultItem),
}) satisfies z.ZodType<SearchDetail>;

/** A run's token counts, as a provider reported them. */
export const usage = z.object({ inputTokens: z.number().int(), outputTokens: z.number().int(), totalTokens: z.number().int() });
