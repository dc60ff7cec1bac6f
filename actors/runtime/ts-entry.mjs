// @ts-check
// Loads a TypeScript module from a plain-JS thread entry (an actor host, a CPU-pool worker). Node 20
// does not carry tsx's loader hooks into worker threads, so a thread started from the sources registers
// tsx itself first. In the compiled tree `make test` runs (test/compile.mjs) the module is JavaScript
// beside its source and no loader is needed.
import { existsSync } from 'node:fs';

/**
 * Imports `name` (no extension) relative to `base` (the caller's import.meta.url): `name.js` when it is
 * there, else `name.ts` through tsx.
 * @param {string} base
 * @param {string} name
 */
export async function importTs(base, name) {
  const compiled = new URL(`${name}.js`, base);
  if (existsSync(compiled)) return import(compiled.href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(new URL(`${name}.ts`, base).href);
}
