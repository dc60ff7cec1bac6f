// Child-process entry (plain JS: it needs no tsx): `node embedded-initdb.mjs <pgDir> <marker>` creates a
// fresh PGlite data directory and exits. PGlite.create runs initdb in a second WASM instance and leaves
// ~400 MB of WASM heaps and in-memory file buffers that only a major GC frees (an idle service never
// runs one); in a worker thread ~170 MB still stayed with the process's allocator. A process that
// exits gives all of it back.
// initdb writes PG_VERSION before most of the cluster: the marker, holding this pid, says the cluster
// is unfinished until initdb is done, so a start after a crash in between initialises it again
// instead of failing on it for ever (embedded.ts).
import { unlinkSync, writeFileSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';

const [pgDir, marker] = process.argv.slice(2);
writeFileSync(marker, `${process.pid}\n`, { mode: 0o600 });
const db = await PGlite.create({ dataDir: pgDir });
await db.close();
unlinkSync(marker);
