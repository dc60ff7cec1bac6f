// The spec's exact messages, defined once for the HTTP layer and the runs alike (runs must not import
// the HTTP layer), so a reader can grep from contract to code.
export const CHAT_NOT_FOUND = 'chat not found';
export const SEARCH_NOT_FOUND = 'search not found';
export const ACTIVE_CHAT_STREAM_NOT_FOUND = 'active chat stream not found';
export const ACTIVE_SEARCH_STREAM_NOT_FOUND = 'active search stream not found';
export const ACTIVE_CHAT_STREAM_EXISTS = 'an active chat stream already exists for this chat';
/** The `error` event of a run whose chat or search was deleted while it went (nothing it does can be stored). */
export const CHAT_DELETED = 'run cancelled: chat deleted';
export const SEARCH_DELETED = 'run cancelled: search deleted';
/** The `error` event of a search run a user stopped (docs/api-notes.md, "Stopping a run"). */
export const SEARCH_RUN_STOPPED = 'search run stopped';
