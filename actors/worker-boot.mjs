// Worker entry in plain JS: Node 20 does not carry tsx's loader hooks into worker threads, so each
// worker registers tsx itself and then loads the TypeScript host. In the compiled tree `make test`
// runs (test/compile.mjs) the host is JavaScript beside this file and needs no loader.
import { existsSync } from 'node:fs';

const compiled = new URL('./host-thread.js', import.meta.url);
if (existsSync(compiled)) await import(compiled.href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./host-thread.ts');
}
