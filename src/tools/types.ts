// The one interface every service-run tool implements (web_search, fetch_url, coding_exec, shell_exec).
import type { Config } from '../base/config.ts';
import type { CpuPool } from '../base/cpu-pool.ts';
import type { ToolSpec } from '../providers/types.ts';
import { ErrorCodes, ServiceError } from '../base/errors.ts';

export interface ToolContext {
  config: Config;
  /** Aborted when the run is cancelled or the tool's own timeout passes. */
  signal: AbortSignal;
  /** The thread's pool for CPU-heavy work (fetch_url's HTML to text). */
  cpu: CpuPool;
}

export interface ToolOutcome {
  /** What goes back to the model as the tool result (already capped). */
  output: string;
  /** A short preview for the `tool_call` event's `resultPreview`. */
  preview?: string;
}

export interface ServiceTool extends ToolSpec {
  /** One line for the `tool_call` event's `summary`, e.g. `Searching the web for "x"`. */
  summarize(args: Record<string, unknown>): string;
  /** Throws ToolError (or any Error) on failure; the message goes back to the model. */
  run(args: Record<string, unknown>, ctx: ToolContext): Promise<ToolOutcome>;
}

/** A tool failure whose message is shown to the model and stored on the tool message. */
export class ToolError extends ServiceError {
  /** What the tool produced before it failed (a stopped command's output so far); follows the message in the tool result. */
  readonly output: string | undefined;
  constructor(message: string, options?: { cause?: unknown; output?: string }) {
    super(ErrorCodes.TOOL, message, options);
    this.name = 'ToolError';
    this.output = options?.output;
  }
}
