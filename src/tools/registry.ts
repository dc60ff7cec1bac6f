// Which service-run tools exist for a given configuration, by name.
import type { Config } from '../base/config.ts';
import { codingExecTool } from './coding-exec.ts';
import { fetchUrlTool } from './fetch-url.ts';
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
