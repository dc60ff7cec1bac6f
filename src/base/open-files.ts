// Each active stream holds two sockets (its client's and its provider's), so the process's limit on
// open files caps how many runs can really go at once. Provider streams over HTTP/2 share connections
// (PROVIDER_HTTP2), so the count below is the worst case: every provider on HTTP/1.1. Past it, a run's provider connection fails
// with EMFILE and the run ends with an error. Node raises the soft limit to the hard one at start, so
// the limit read here is the one that applies; the start warns when MAX_ACTIVE_RUNS cannot be met.
import { readFileSync } from 'node:fs';

/** Sockets and files besides the streams: database pools, Redis, the listener, modules, logs. */
export const OPEN_FILES_RESERVE = 256;

/** The process's open-files limit from /proc/self/limits; null where it cannot be read (not Linux). */
export function openFilesLimit(read: () => string = () => readFileSync('/proc/self/limits', 'utf8')): number | null {
  let text: string;
  try {
    text = read();
  } catch {
    return null;
  }
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(text);
  if (!match) return null;
  return match[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(match[1]);
}

/** The warning to log when `maxActiveRuns` streams would need more files than `limit`; null when they fit. */
export function openFilesWarning(limit: number | null, maxActiveRuns: number): string | null {
  if (limit === null) return null;
  const needed = 2 * maxActiveRuns + OPEN_FILES_RESERVE;
  if (needed <= limit) return null;
  const fit = Math.max(0, Math.floor((limit - OPEN_FILES_RESERVE) / 2));
  return (
    `MAX_ACTIVE_RUNS=${maxActiveRuns} needs about ${needed} open files (two sockets per stream, one of them the provider's over HTTP/1.1) but this process may open ${limit}: ` +
    `streams past about ${fit} will fail to reach their provider (EMFILE). Raise the limit (ulimit -n, systemd LimitNOFILE=) or lower MAX_ACTIVE_RUNS`
  );
}
