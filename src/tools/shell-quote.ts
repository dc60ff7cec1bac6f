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

/** Runs a script in a login shell: bash when the remote has it, else sh (both read the user's profile). */
export function loginShell(script: string): string {
  const q = shellQuote(script);
  return `if command -v bash >/dev/null 2>&1; then exec bash -lc ${q}; else exec sh -lc ${q}; fi`;
}

const REMOTE_TIMEOUT_SLACK_S = 5;

/**
 * The full remote command: create and enter the workdir, then run `script`. When the remote has
 * `timeout`, the script runs under it as well, so a server that ignores our KILL signal and the
 * closed connection still ends the process near the deadline.
 */
export function remoteCommand(workdir: string, script: string, timeoutMs?: number): string {
  const dir = quoteRemotePath(workdir);
  const inner = loginShell(script);
  if (!timeoutMs) return `mkdir -p ${dir} && cd ${dir} && ${inner}`;
  // A few seconds past our own deadline: normally our TERM/KILL ends it first and the model gets our message.
  const secs = Math.ceil(timeoutMs / 1000) + REMOTE_TIMEOUT_SLACK_S;
  const guarded = `exec timeout -k 5 ${secs} sh -c ${shellQuote(inner)}`;
  return `mkdir -p ${dir} && cd ${dir} && if command -v timeout >/dev/null 2>&1; then ${guarded}; else ${inner}; fi`;
}
