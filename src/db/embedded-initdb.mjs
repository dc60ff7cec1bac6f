// Child-process entry (plain JS: it needs no tsx): `node embedded-initdb.mjs <pgDir>` creates a fresh
// PGlite data directory and exits. PGlite.create runs initdb in a second WASM instance and leaves
// ~400 MB of WASM heaps and in-memory file buffers that only a major GC frees (an idle service never
// runs one); in a worker thread ~170 MB still stayed with the process's allocator. A process that
// exits gives all of it back.
import { PGlite } from '@electric-sql/pglite';

const db = await PGlite.create({ dataDir: process.argv[2] });
await db.close();
