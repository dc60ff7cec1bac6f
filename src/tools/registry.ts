// Which service-run tools exist for a given configuration, by name.
import type { Config } from '../config.ts';
import { codingExecTool } from './coding-exec.ts';
import { fetchUrlTool } from './fetch-url.ts';
import { closeHtmlPool } from './html-pool.ts';
import { shellExecTool } from './shell-exec.ts';
import type { ServiceTool } from './types.ts';
import { webSearchTool } from './web-search.ts';

type ToolFlags = Pick<Config, 'CHAT_CODING_TOOL_ENABLED' | 'CHAT_SHELL_TOOL_ENABLED'>;

/** web_search and fetch_url always; the remote tools only when switched on. */
export function availableTools(config: ToolFlags): ServiceTool[] {
  const tools = [webSearchTool, fetchUrlTool];
  if (config.CHAT_CODING_TOOL_ENABLED) tools.push(codingExecTool);
  if (config.CHAT_SHELL_TOOL_ENABLED) tools.push(shellExecTool);
  return tools;
}

export function toolByName(config: ToolFlags, name: string): ServiceTool | undefined {
  return availableTools(config).find((t) => t.name === name);
}

/** The available tools among `names`, in registry order; unknown or disabled names are ignored. */
export function filterEnabled(config: ToolFlags, names: readonly string[]): ServiceTool[] {
  const wanted = new Set(names);
  return availableTools(config).filter((t) => wanted.has(t.name));
}

/** Releases what the tools hold (the HTML worker pool) so the process can exit cleanly. */
export async function closeTools(): Promise<void> {
  await closeHtmlPool();
}
