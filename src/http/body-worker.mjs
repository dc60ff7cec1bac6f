// Runs inside the CPU pool (src/cpu-pool.ts, via body-pool.ts): parses and checks one big request
// body. The schemas are TypeScript and Node 20 does not carry tsx's loader hooks into worker threads,
// so this entry registers tsx itself (as actors/worker-boot.mjs does) and then loads them.
import { register } from 'tsx/esm/api';

register();
const { parseNamedBody } = await import('./body-parse.ts');

export default parseNamedBody;
