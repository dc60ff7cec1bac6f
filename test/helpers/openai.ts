// The official `openai` SDK against a service of the tests: a client for a base URL, and a stream read whole.
import OpenAI from 'openai';

/** A client of the service's OpenAI-compatible API at `url` (no retries: a test sees every answer). */
export const openaiClient = (url: string, apiKey: string): OpenAI => new OpenAI({ baseURL: `${url}/openai/v1`, apiKey, maxRetries: 0 });

/** Every event of a Responses stream, in order, to its end. */
export async function readAll(stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>): Promise<OpenAI.Responses.ResponseStreamEvent[]> {
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const ev of stream) events.push(ev);
  return events;
}
