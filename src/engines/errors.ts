// One error type for both search engines, so callers (web_search tool, search runs) can show
// the engine's own message and branch on the HTTP status without knowing which engine failed.
import { ErrorCodes, ServiceError } from '../base/errors.ts';
export type EngineName = 'engine_a' | 'engine_b';

export class EngineError extends ServiceError {
  readonly engine: EngineName;
  /** HTTP status of the engine's answer; undefined for network failures, timeouts and aborts. */
  readonly status: number | undefined;
  /** The engine's own `error` text (or a short excerpt of a non-JSON body), when it sent one. */
  readonly engineMessage: string | undefined;

  constructor(
    engine: EngineName,
    message: string,
    details: { status?: number; engineMessage?: string; cause?: unknown } = {},
  ) {
    super(ErrorCodes.ENGINE, message, { cause: details.cause });
    this.name = 'EngineError';
    this.engine = engine;
    this.status = details.status;
    this.engineMessage = details.engineMessage;
  }
}
