// Worker entry in plain JS: Node 20 does not carry tsx's loader hooks into worker threads, so each
// worker registers tsx itself and then loads the TypeScript host.
import { register } from 'tsx/esm/api';
register();
await import('./host-thread.ts');
