// The service's run kinds: one map from kind to request and value types, and the run function of each.
// Routes start runs through the registry with these types; the runtime itself knows none of them.
import type { Supervisor } from './runtime/supervisor.ts';
import type { ChatRunRequest, ChatRunValue } from './chat-run.ts';
import type { SearchRunRequest, SearchRunValue } from './search-run.ts';
import type { TitleRunRequest, TitleRunValue } from './title-run.ts';

export type RunTypes = {
  chat: { request: ChatRunRequest; value: ChatRunValue };
  search: { request: SearchRunRequest; value: SearchRunValue };
  title: { request: TitleRunRequest; value: TitleRunValue };
};

export type RunKind = keyof RunTypes;
export type RunSupervisor = Supervisor<RunTypes>;
