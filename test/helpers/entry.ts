// How a test starts one of the project's TypeScript entries in a child process.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
/** Whether the tests run from the compiled tree `make test` builds (test/compile.mjs) rather than through tsx. */
const compiled = import.meta.url.endsWith('.js');

/**
 * The arguments that run the TypeScript entry `file` (relative to the repository) in a child process:
 * its compiled JavaScript when this test runs compiled, else the source through tsx. A process started
 * by a test lives for seconds: V8's optimising WASM tier compiles PGlite for nothing there (one start
 * to its listening line: 10.1 s of CPU instead of 12.0 s). Production keeps both tiers.
 */
export function entryArgs(file: string): string[] {
  return compiled ? ['--liftoff-only', path.join(root, file.replace(/\.ts$/, '.js'))] : ['--liftoff-only', '--import', 'tsx', path.join(root, file)];
}
