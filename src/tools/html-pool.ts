// The piscina pool that runs html-worker.mjs. Created on first use (most processes never fetch a page)
// and closed by closeHtmlPool() on shutdown so it does not keep the process alive.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';

export interface HtmlTask {
  html: string;
  /** The page's final URL, so relative links come out absolute. */
  baseUrl: string;
}

export interface HtmlResult {
  title: string | null;
  text: string;
}

let pool: Piscina<HtmlTask, HtmlResult> | null = null;

function getPool(): Piscina<HtmlTask, HtmlResult> {
  pool ??= new Piscina<HtmlTask, HtmlResult>({
    filename: fileURLToPath(new URL('./html-worker.mjs', import.meta.url)),
    minThreads: 0,
    // Conversions are rare and short: a few threads, never all cores (the actor hosts need them).
    maxThreads: Math.max(1, Math.min(4, Math.floor(os.availableParallelism() / 2))),
    // Idle workers exit, so a process that fetched one page does not hold threads forever.
    idleTimeout: 30_000,
  });
  return pool;
}

export async function htmlToTextInPool(task: HtmlTask, signal?: AbortSignal): Promise<HtmlResult> {
  return getPool().run(task, { signal: signal ?? null });
}

export async function closeHtmlPool(): Promise<void> {
  const p = pool;
  pool = null;
  if (p) await p.destroy();
}
