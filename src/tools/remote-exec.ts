// What coding_exec and shell_exec share: target from config, workdir wrapper, run, format.
import type { Config } from '../base/config.ts';
import { previewOf } from './args.ts';
import { remoteCommand } from './shell-quote.ts';
import { formatSshResult, runSsh, sshTarget } from './ssh.ts';
import { ToolError, type ToolContext, type ToolOutcome } from './types.ts';

export interface RemoteExecSpec {
  tool: string;
  /** The shell script to run in the workdir (runs under `bash -lc`, else `sh -lc`). */
  script: string;
  timeoutMs: number;
  timeoutVariable: keyof Config;
  /** The argument the script comes from, and what the model can do when it is too long to send. */
  tooLong: { argument: string; hint: string };
}

/**
 * sshd runs the command line as one argument (`$SHELL -c <command>`), and Linux refuses a single
 * argument of 128 KB or more (MAX_ARG_STRLEN, counting its NUL): past that the connection drops or
 * the exec fails with a message that tells the model nothing it can act on.
 */
export const MAX_COMMAND_BYTES = 128 * 1024 - 1;

export async function runRemote(spec: RemoteExecSpec, ctx: ToolContext): Promise<ToolOutcome> {
  const target = sshTarget(ctx.config);
  const command = remoteCommand(ctx.config.CHAT_CODING_REMOTE_WORKDIR, spec.script, spec.timeoutMs);
  const bytes = Buffer.byteLength(command);
  if (bytes > MAX_COMMAND_BYTES) {
    throw new ToolError(
      `${spec.tool}: the ${spec.tooLong.argument} is too long: ${bytes} bytes as a remote command line, at most ${MAX_COMMAND_BYTES} (${spec.tooLong.hint})`,
    );
  }
  const result = await runSsh(target, command, {
    tool: spec.tool,
    timeoutMs: spec.timeoutMs,
    timeoutVariable: spec.timeoutVariable,
    signal: ctx.signal,
  });
  const output = formatSshResult(result);
  const status = result.exitSignal ? `signal ${result.exitSignal}` : `exit ${result.exitCode ?? '?'}`;
  const tail = result.stdout.toString().trim() || result.stderr.toString().trim();
  return { output, preview: `${status}: ${previewOf(tail.slice(-400), 160)}` };
}
