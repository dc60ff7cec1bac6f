// The fencing token's refusal (sql/007_fencing.sql): a run's write into a chat that a later run
// has started on since.
import { ErrorCodes, ServiceError } from '../base/errors.ts';

/** The token a run gets when it creates its chat (the chat's first run). */
export const FIRST_RUN_TOKEN = 1;

export class FencedWriteError extends ServiceError {
  constructor(
    readonly chatId: string,
    readonly runToken: number,
    what: string,
  ) {
    super(ErrorCodes.FENCED_WRITE, `write refused by the fencing token: ${what} for chat ${chatId} (run token ${runToken}), which a later run has taken over`);
    this.name = 'FencedWriteError';
  }
}
