// HTML to text for fetch_url, in the shared CPU pool (src/base/cpu-pool.ts): big pages take long enough
// to stall every run sharing the thread.
import type { CpuPool } from '../base/cpu-pool.ts';

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

/**
 * Twice what the densest 5 MB page we tried needs. Some pages need far more: html-to-text lays a
 * table out slot by slot, so a few cells with big colspan × rowspan take gigabytes. Such a page fails
 * alone instead of growing the process until it is killed.
 */
export const HTML_HEAP_MB = 512;

export async function htmlToTextInPool(cpu: CpuPool, task: HtmlTask, signal?: AbortSignal): Promise<HtmlResult> {
  return cpu.run<HtmlTask, HtmlResult>(WORKER, task, { signal, maxHeapMb: HTML_HEAP_MB });
}
