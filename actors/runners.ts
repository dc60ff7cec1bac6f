// The run functions by kind, shared by every actor host.
import type { RunDeps } from '../src/run-deps.ts';
import type { Runners } from './host.ts';
import { chatRun } from './chat-run.ts';
import { searchRun } from './search-run.ts';

export const runners: Runners<RunDeps> = { chat: chatRun, search: searchRun };
