// The run definitions by kind, shared by every actor host, and each kind's terminal error event for the
// supervisor (which runs none of them).
import type { RunDeps } from '../src/domain/run-deps.ts';
import type { Runners } from './runtime/host.ts';
import { chatRun } from './chat-run.ts';
import type { RunKind, RunTypes } from './runs.ts';
import { searchRun } from './search-run.ts';
import { titleRun } from './title-run.ts';

export const runners: Runners<RunTypes, RunDeps> = { chat: chatRun, search: searchRun, title: titleRun };

export const errorFrames: { [K in RunKind]: (message: string) => string } = {
  chat: chatRun.errorFrame,
  search: searchRun.errorFrame,
  title: titleRun.errorFrame,
};
