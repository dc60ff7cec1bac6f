// POSIX shell quoting for the remote command line. Everything the model writes ends up inside single
// quotes, so the remote login shell expands nothing in it ($(...), backticks, globs, ~).

/** `it's` → `'it'\''s'`: the one quoting that is inert in every POSIX shell. */
export function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * A directory for the remote shell: quoted, except that a leading `~` or `~/` becomes "$HOME" so the
 * remote shell still expands it (a quoted `~` would be a directory literally named `~`).
 */
export function quoteRemotePath(dir: string): string {
  if (dir === '~') return '"$HOME"';
  if (dir.startsWith('~/')) {
    const rest = dir.slice(2);
    return rest ? `"$HOME"/${shellQuote(rest)}` : '"$HOME"';
  }
  return shellQuote(dir);
}

const REMOTE_TIMEOUT_SLACK_S = 5;

/**
 * The full remote command: create and enter the workdir, then run `script` in a login shell: bash
 * when the remote has it, else sh (both read the user's profile). When the remote has `timeout`, the
 * script runs under it as well, so a server that ignores our KILL signal and the closed connection
 * still ends the process near the deadline.
 *
 * The program is chosen into "$@" first and the script appears once, quoted once: sshd hands the
 * whole line to `sh -c` as one argument, which Linux caps at 128 KB, so a copy per branch (each
 * re-quoted, a quote growing fourfold each time) made scripts of a few KB fail.
 */
export function remoteCommand(workdir: string, script: string, timeoutMs?: number): string {
  const dir = quoteRemotePath(workdir);
  const steps = ['if command -v bash >/dev/null 2>&1; then set -- bash; else set -- sh; fi'];
  if (timeoutMs) {
    // A few seconds past our own deadline: normally our TERM/KILL ends it first and the model gets our message.
    const secs = Math.ceil(timeoutMs / 1000) + REMOTE_TIMEOUT_SLACK_S;
    steps.push(`if command -v timeout >/dev/null 2>&1; then set -- timeout -k 5 ${secs} "$@"; fi`);
  }
  steps.push(`exec "$@" -lc ${shellQuote(script)}`);
  return `mkdir -p ${dir} && cd ${dir} && { ${steps.join('; ')}; }`;
}
