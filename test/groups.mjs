// Which test files share a process (test/run.mjs): plain data, so test/runner/groups.test.ts can pin
// that every file runs exactly once.

/** Each alone, first, in this order: the files with the longest wall time alone here (16–39 s). */
export const SOLO = [
  'test/cluster/instances',
  'test/api/streams',
  'test/api/idempotency-after-stops',
  'test/api/recovery',
  'test/deploy/rolling-restart',
  'test/cluster/fencing',
  'test/fuzz/fuzz',
];
export const GROUP_SIZE = 6;

/**
 * Directories whose files each need a process of their own: they set process-wide state that the next
 * file of a shared process would inherit (test/telemetry: OpenTelemetry's global tracer and meter
 * providers, and OTEL_* variables read once).
 */
export const OWN_PROCESS_DIRS = ['test/telemetry'];

/** `test/api/chats` of `.build/test/api/chats.test.js` (or of the .ts source). */
export const testName = (file) => file.replace(/^(\.\/)?(\.build\/)?/, '').replace(/\.test\.[jt]s$/, '');

/**
 * The processes, in the order they start: each SOLO file alone, then each directory's other files in
 * groups of at most GROUP_SIZE, as even as can be (7 files: 4 + 3, not 6 + 1), the biggest groups
 * first. A group's files keep name order.
 */
export function planProcesses(files) {
  const solo = SOLO.flatMap((s) => files.filter((f) => testName(f) === s));
  const byDir = new Map();
  for (const f of [...files].sort()) {
    if (solo.includes(f)) continue;
    const dir = testName(f).replace(/\/[^/]+$/, '');
    const key = OWN_PROCESS_DIRS.includes(dir) ? testName(f) : dir;
    byDir.set(key, [...(byDir.get(key) ?? []), f]);
  }
  const groups = [];
  for (const [dir, members] of byDir) {
    const count = Math.ceil(members.length / GROUP_SIZE);
    for (let g = 0; g < count; g++) {
      groups.push({ name: `${dir.replace(/^test\//, '').replaceAll('/', '-')}-${g + 1}`, members: members.filter((_, i) => i % count === g) });
    }
  }
  groups.sort((a, b) => b.members.length - a.members.length || a.name.localeCompare(b.name));
  return [...solo.map((f) => ({ name: testName(f), members: [f] })), ...groups];
}
