// The run definitions by kind, shared by every actor host.
import type { RunDeps } from '../src/run-deps.ts';
import type { Runners } from './runtime/host.ts';
import { chatRun } from './chat-run.ts';
import type { RunTypes } from './runs.ts';
import { searchRun } from './search-run.ts';
import { titleRun } from './title-run.ts';

export const runners: Runners<RunTypes, RunDeps> = { chat: chatRun, search: searchRun, title: titleRun };
