// Worker entry in plain JS: it loads the TypeScript host (compiled or through tsx: runtime/ts-entry.mjs).
import { importTs } from './runtime/ts-entry.mjs';

await importTs(import.meta.url, './host-thread');
