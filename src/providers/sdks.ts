// The two provider SDKs, loaded through Node's CommonJS loader; every value the service takes from them
// (the client classes, the error classes it tests with instanceof) comes from here, so there is one copy
// of each class in a thread. Why not `import`: the service runs under tsx (no build step), and under
// tsx every ES module file goes through its off-thread loader hooks, one round trip per file. The SDKs
// are hundreds of files each, and every thread that runs providers (the main thread and each actor
// thread) loads them: an ESM import of both cost ~1.5 s of CPU per thread here, against ~0.55 s through
// require (Node 20, idle 2-core machine, process.cpuUsage around each). The packages ship both builds
// with the same API, and their types are the same declarations.
import { createRequire } from 'node:module';
import type * as AnthropicSdk from '@anthropic-ai/sdk';
import type * as OpenAISdk from 'openai';

const require = createRequire(import.meta.url);

/** `@anthropic-ai/sdk`'s exports: `A.default` is the client, `A.APIError` and the rest its errors. */
export const A = require('@anthropic-ai/sdk') as typeof AnthropicSdk;
/** `openai`'s exports: `O.default` is the client, `O.APIError` and the rest its errors. */
export const O = require('openai') as typeof OpenAISdk;
export const Anthropic = A.default;
export const OpenAI = O.default;
