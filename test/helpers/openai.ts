// The official `openai` SDK against a service of the tests: a client for a base URL, a suite's server with its
// client, and a stream read whole.
import { after, before } from 'node:test';
import OpenAI from 'openai';
import { startTestServer, type TestServer, type TestServerOptions } from './server.ts';

/** A client of the service's OpenAI-compatible API at `url` (no retries: a test sees every answer). */
export const openaiClient = (url: string, apiKey: string): OpenAI => new OpenAI({ baseURL: `${url}/openai/v1`, apiKey, maxRetries: 0 });

/**
 * Before the calling suite, a server (`opts` as startTestServer's) as `t` and a client of its OpenAI-compatible
 * API with `apiKey` as `ai`; the server is closed after it.
 */
export function openaiServer(opts: TestServerOptions, apiKey: string): { t: TestServer; ai: OpenAI } {
  const s = {} as { t: TestServer; ai: OpenAI };
  before(async () => {
    s.t = await startTestServer(opts);
    s.ai = openaiClient(s.t.url, apiKey);
  });
  after(() => s.t?.close());
  return s;
}

/** Every event of a Responses stream, in order, to its end. */
export async function readAll(stream: AsyncIterable<OpenAI.Responses.ResponseStreamEvent>): Promise<OpenAI.Responses.ResponseStreamEvent[]> {
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const ev of stream) events.push(ev);
  return events;
}
