// Runs inside the CPU pool (src/cpu-pool.ts, via body-pool.ts): parses and checks one big request
// body. The schemas are TypeScript and Node 20 does not carry tsx's loader hooks into worker threads,
// so this entry registers tsx itself (as actors/worker-boot.mjs does) and then loads them; in the
// compiled tree `make test` runs (test/compile.mjs) they are JavaScript beside this file.
import { existsSync } from 'node:fs';

const compiled = new URL('./body-parse.js', import.meta.url);
let parse;
if (existsSync(compiled)) parse = await import(compiled.href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  parse = await import('./body-parse.ts');
}

export default parse.parseNamedBody;
