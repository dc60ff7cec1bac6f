// HTML to text for fetch_url, in the shared CPU pool (src/cpu-pool.ts): big pages take long enough
// to stall every run sharing the thread.
import type { CpuPool } from '../cpu-pool.ts';

export interface HtmlTask {
  html: string;
  /** The page's final URL, so relative links come out absolute. */
  baseUrl: string;
}

export interface HtmlResult {
  title: string | null;
  text: string;
}

const WORKER = new URL('./html-worker.mjs', import.meta.url);

export async function htmlToTextInPool(cpu: CpuPool, task: HtmlTask, signal?: AbortSignal): Promise<HtmlResult> {
  return cpu.run<HtmlTask, HtmlResult>(WORKER, task, { signal });
}
