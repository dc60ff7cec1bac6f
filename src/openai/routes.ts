// The OpenAI-compatible API (`/openai/v1`, also under `/api`): a second door to the same runs.
import type { AppContext } from '../service/context.ts';
import type { Route } from '../http/router.ts';
import { chatCompletionRoutes } from './chat-completions.ts';
import { modelRoutes } from './models.ts';
import type { ResponseEnds } from './response-ends.ts';
import { responseRoutes } from './responses.ts';

/** `ends`: where the stored responses' ends are announced (cluster-wide when the server joined one). */
export function openaiRoutes(app: AppContext, ends: ResponseEnds): Route[] {
  return [...modelRoutes(app), ...chatCompletionRoutes(app), ...responseRoutes(app, ends)];
}
