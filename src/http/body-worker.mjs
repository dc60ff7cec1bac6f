// Runs inside the CPU pool (src/base/cpu-pool.ts, via body-pool.ts): parses and checks one big request
// body. The schemas are TypeScript; this plain-JS entry loads them compiled or through tsx
// (actors/runtime/ts-entry.mjs, as the actor hosts' entry does).
import { importTs } from '../../actors/runtime/ts-entry.mjs';

const { parseNamedBody } = await importTs(import.meta.url, './body-parse');

export default parseNamedBody;
