// coding_exec: hands a task to the remote coding CLI (CHAT_CODING_COMMAND, its non-interactive exec mode)
// in the persistent remote workspace. The task is one shell-quoted argument, so nothing in it is expanded.
import { previewOf, requireString } from './args.ts';
import { runRemote } from './remote-exec.ts';
import { shellQuote } from './shell-quote.ts';
import type { ServiceTool } from './types.ts';

/**
 * A task that begins with "-" (a Markdown list, "--help me…") would be read by the CLI as its options:
 * a leading space makes it the prompt operand for any argument parser, and the model reads it the same.
 * ("--" would do it too, but the command is the operator's and may be a wrapper that takes it literally.)
 */
const asOperand = (task: string): string => (task.startsWith('-') ? ` ${task}` : task);

export const codingExecTool: ServiceTool = {
  name: 'coding_exec',
  description:
    'Delegates coding, shell, repository inspection and other complex software tasks to a persistent remote coding ' +
    'CLI workspace over SSH. The CLI works autonomously (it can read and edit files, run commands and tests) in a ' +
    'workspace directory that persists between calls, then reports what it did. Give a complete, self-contained ' +
    'task description: goal, relevant paths or repository URLs, constraints, and what to report back. It cannot ask ' +
    'follow-up questions. Returns the exit code and the CLI output; runs can take several minutes.',
  parameters: {
    type: 'object',
    properties: {
      task: { type: 'string', description: 'The full task for the coding CLI, in natural language.' },
    },
    required: ['task'],
    additionalProperties: false,
  },
  summarize(args) {
    return `Delegating coding task: ${typeof args.task === 'string' ? previewOf(args.task, 120) : ''}`;
  },
  async run(args, ctx) {
    const task = requireString('coding_exec', args, 'task');
    return runRemote(
      {
        tool: 'coding_exec',
        // The command prefix is operator configuration (trusted, may carry flags); only the task is quoted.
        script: `${ctx.config.CHAT_CODING_COMMAND} ${shellQuote(asOperand(task))}`,
        timeoutMs: ctx.config.CHAT_CODING_EXEC_TIMEOUT_MS,
        timeoutVariable: 'CHAT_CODING_EXEC_TIMEOUT_MS',
        tooLong: { argument: 'task', hint: 'shorten the task: point to files instead of pasting them' },
      },
      ctx,
    );
  },
};
