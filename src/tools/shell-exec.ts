// shell_exec: one non-interactive shell command on the remote host (never in the service's own container).
import { previewOf, requireString } from './args.ts';
import { runRemote } from './remote-exec.ts';
import type { ServiceTool } from './types.ts';

export const shellExecTool: ServiceTool = {
  name: 'shell_exec',
  description:
    'Runs a non-interactive shell command on the remote workspace host over SSH (bash -lc when available, else ' +
    'sh -lc), starting in the workspace directory, and returns the exit code, stdout and stderr. Stdin is closed, ' +
    'so commands must not wait for input (use -y/--yes flags, no editors or pagers). Files persist between calls. ' +
    'Long output is cut in the middle; a time limit applies.',
  parameters: {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The shell command or script to run, e.g. "ls -la && git status".' },
    },
    required: ['command'],
    additionalProperties: false,
  },
  summarize(args) {
    return `Running shell command: ${typeof args.command === 'string' ? previewOf(args.command, 120) : ''}`;
  },
  async run(args, ctx) {
    const command = requireString('shell_exec', args, 'command');
    return runRemote(
      {
        tool: 'shell_exec',
        script: command,
        timeoutMs: ctx.config.CHAT_SHELL_EXEC_TIMEOUT_MS,
        timeoutVariable: 'CHAT_SHELL_EXEC_TIMEOUT_MS',
        tooLong: { argument: 'command', hint: 'write large files in several smaller commands' },
      },
      ctx,
    );
  },
};
