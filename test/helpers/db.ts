// Databases for tests: always the embedded PGlite, plus real Postgres when TEST_DATABASE_URL is set.
// Every open() is a fresh, empty, migrated database, so test files can run in parallel.
import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { readMigrations } from '../../src/db/migrate.ts';
import { openDatabase } from '../../src/db/pool.ts';
import type { Database } from '../../src/db/types.ts';

export type DbKind = 'embedded' | 'postgres';

/** A variant's name in test titles, so a CI log can be counted per database (grep '\[postgres\]'). */
export const variantTag = (kind: DbKind): string => (kind === 'embedded' ? '[pglite]' : '[postgres]');

/**
 * The databases this run covers: PGlite always, Postgres when TEST_DATABASE_URL is set. Without it the
 * file's Postgres variant is registered as a skipped suite saying why, so the runner counts and prints it
 * instead of the variant vanishing.
 */
export function databaseKinds(): DbKind[] {
  if (process.env.TEST_DATABASE_URL) return ['embedded', 'postgres'];
  const file = path.relative(process.cwd(), process.argv[1] ?? 'this file');
  test(`${file} [postgres]`, { skip: 'TEST_DATABASE_URL is not set, so the Postgres variant does not run' }, () => {});
  return ['embedded'];
}

export interface TestDatabase {
  name: DbKind;
  /** `[pglite]` or `[postgres]`, for the suite's title. */
  tag: string;
  open(): Promise<Database>;
}

export async function testDatabases(): Promise<TestDatabase[]> {
  return databaseKinds().map((name) => ({ name, tag: variantTag(name), open: name === 'embedded' ? openEmbedded : openPostgres }));
}

// ---- embedded -----------------------------------------------------------------------------------

/** A DATA_DIR already holding an initialised (not migrated) PGlite cluster; remove it with cleanup(). */
export async function freshEmbeddedDataDir(): Promise<{ dataDir: string; cleanup(): Promise<void> }> {
  // PGlite's initdb takes seconds; copying a closed cluster made once per machine takes milliseconds.
  return dataDirFrom(await pgliteTemplate().catch(() => null));
}

/** A new DATA_DIR holding a copy of `template` as its cluster (none: an empty one, initialised at its first open). */
async function dataDirFrom(template: string | null): Promise<{ dataDir: string; cleanup(): Promise<void> }> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'store-test-'));
  if (template) await copyCluster(template, path.join(dataDir, 'pg'));
  return { dataDir, cleanup: () => rm(dataDir, { recursive: true, force: true }) };
}

let migratedPromise: Promise<string> | undefined;

/**
 * Like freshEmbeddedDataDir, with sql/ already applied: a service start then finds its schema current
 * instead of running every migration in WASM (seconds, per server, on a loaded machine). The template is
 * keyed by the migration files' names and contents, so a new or changed file builds a new one; the
 * migrations themselves are still tested from an empty cluster (test/store/db.test.ts) and on Postgres.
 */
export async function migratedEmbeddedDataDir(): Promise<{ dataDir: string; cleanup(): Promise<void> }> {
  const template = await (migratedPromise ??= migratedTemplate()).catch(() => null);
  return template ? dataDirFrom(template) : freshEmbeddedDataDir();
}

/**
 * Copies a closed cluster (39 MB in ~1,000 files). fs.cp walks it in JavaScript, one promise chain per
 * file: 0.8 s of CPU per copy, against 0.25 s for cp(1), and the suite copies one per embedded test
 * database and test server. Where there is no cp, fs.cp does the same job.
 */
function copyCluster(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('cp', ['-a', from, to], (err) => {
      if (!err) resolve();
      else if ((err as NodeJS.ErrnoException).code === 'ENOENT') cp(from, to, { recursive: true }).then(resolve, reject);
      else reject(err);
    });
  });
}

async function migratedTemplate(): Promise<string> {
  const hash = createHash('sha256');
  for (const m of await readMigrations()) hash.update(m.name).update('\0').update(m.sql).update('\0');
  const raw = await pgliteTemplate();
  const dir = `${path.dirname(raw)}-migrated-${hash.digest('hex').slice(0, 16)}`;
  const ready = path.join(dir, 'ready');
  if (await exists(ready)) return path.join(dir, 'pg');
  const { dataDir, cleanup } = await freshEmbeddedDataDir();
  try {
    const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
    await db.close();
    const building = `${dir}.build-${process.pid}-${randomBytes(4).toString('hex')}`;
    await mkdir(building, { recursive: true });
    await rename(path.join(dataDir, 'pg'), path.join(building, 'pg'));
    await writeFile(path.join(building, 'ready'), 'migrated');
    // As for the raw template: rename is atomic, and a builder that lost the race uses the winner's.
    await rename(building, dir).catch(() => rm(building, { recursive: true, force: true }));
  } finally {
    await cleanup();
  }
  if (!(await exists(ready))) throw new Error('migrated PGlite template missing');
  return path.join(dir, 'pg');
}

async function openEmbedded(): Promise<Database> {
  const { dataDir, cleanup } = await migratedEmbeddedDataDir();
  try {
    const db = await openDatabase({ DATABASE_URL: undefined, DATA_DIR: dataDir });
    return withCleanup(db, cleanup);
  } catch (err) {
    await cleanup();
    throw err;
  }
}

let templatePromise: Promise<string> | undefined;

/** `${tmp}/pglite-template-<version>/pg`, created by whichever test process gets there first. */
function pgliteTemplate(): Promise<string> {
  return (templatePromise ??= (async () => {
    // package.json is not in the package's exports: find it from the entry point (dist/…).
    const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    const pkgPath = path.join(path.dirname(entry), '..', 'package.json');
    const { version } = JSON.parse(await readFile(pkgPath, 'utf8')) as { version: string };
    const dir = path.join(os.tmpdir(), `pglite-template-${version}`);
    const ready = path.join(dir, 'ready');
    if (await exists(ready)) return path.join(dir, 'pg');
    const { PGlite } = await import('@electric-sql/pglite');
    const building = `${dir}.build-${process.pid}-${randomBytes(4).toString('hex')}`;
    await mkdir(building, { recursive: true });
    const db = await PGlite.create({ dataDir: path.join(building, 'pg') });
    await db.close();
    await writeFile(path.join(building, 'ready'), version);
    // rename is atomic: a concurrent builder that lost the race just uses the winner's copy.
    await rename(building, dir).catch(() => rm(building, { recursive: true, force: true }));
    if (!(await exists(ready))) throw new Error('PGlite template missing');
    return path.join(dir, 'pg');
  })());
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

// ---- postgres -----------------------------------------------------------------------------------

/** A new empty database on TEST_DATABASE_URL's server; drop() removes it even if clients are left. */
export async function createScratchPostgres(): Promise<{ url: string; drop(): Promise<void> }> {
  const adminUrl = process.env.TEST_DATABASE_URL;
  if (!adminUrl) throw new Error('TEST_DATABASE_URL is not set');
  const name = `t_${randomBytes(8).toString('hex')}`;
  await admin(adminUrl, `CREATE DATABASE ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(adminUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function openPostgres(): Promise<Database> {
  const scratch = await createScratchPostgres();
  try {
    const db = await openDatabase({ DATABASE_URL: scratch.url, DATA_DIR: os.tmpdir() }, { poolMax: 5 });
    return withCleanup(db, scratch.drop);
  } catch (err) {
    await scratch.drop();
    throw err;
  }
}

async function admin(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function withCleanup(db: Database, cleanup: () => Promise<void>): Database {
  let closing: Promise<void> | undefined;
  return {
    ...db,
    close: () =>
      (closing ??= (async () => {
        try {
          await db.close();
        } finally {
          await cleanup();
        }
      })()),
  };
}
