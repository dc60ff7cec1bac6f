// What coding_exec and shell_exec share: target from config, workdir wrapper, run, format.
import type { Config } from '../config.ts';
import { previewOf } from './args.ts';
import { remoteCommand } from './shell-quote.ts';
import { formatSshResult, runSsh, sshTarget } from './ssh.ts';
import type { ToolContext, ToolOutcome } from './types.ts';

export interface RemoteExecSpec {
  tool: string;
  /** The shell script to run in the workdir (runs under `bash -lc`, else `sh -lc`). */
  script: string;
  timeoutMs: number;
  timeoutVariable: keyof Config;
}

export async function runRemote(spec: RemoteExecSpec, ctx: ToolContext): Promise<ToolOutcome> {
  const target = sshTarget(ctx.config);
  const command = remoteCommand(ctx.config.CHAT_CODING_REMOTE_WORKDIR, spec.script, spec.timeoutMs);
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
