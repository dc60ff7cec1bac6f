// css_openai_requests_total{api,status}: each façade request counted once, with the status it answered
// (a stream that opened counts as 200; an error after that is an event, not a status).
import type { AppContext } from '../service/context.ts';
import { HttpError } from '../http/errors.ts';
import type { Handler } from '../http/router.ts';

export type OpenAIApi = 'models' | 'chat_completions' | 'responses';

export function counted(app: AppContext, api: OpenAIApi, handler: Handler): Handler {
  const counter = app.metrics.openaiRequests;
  return async (req, reply) => {
    try {
      await handler(req, reply);
      counter.inc({ api, status: '200' });
    } catch (err) {
      counter.inc({ api, status: String(err instanceof HttpError ? err.status : 500) });
      throw err;
    }
  };
}
