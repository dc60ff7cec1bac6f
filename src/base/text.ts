// Text rules shared by input checks, truncation and storage. Postgres text and jsonb cannot hold
// U+0000, and jsonb refuses a lone UTF-16 surrogate, so neither may come from a client, and the
// service must never make one itself by cutting a string between the two halves of a pair.

// Node 20 has both (V8 11.3); TypeScript types them only from lib es2024, which this project does not target.
declare global {
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** Why `s` cannot be stored as it is, or null when it can. */
export function textProblem(s: string): string | null {
  if (s.includes('\0')) return 'contains U+0000 (NUL), which cannot be stored';
  if (!s.isWellFormed()) return 'contains a lone UTF-16 surrogate (not valid Unicode)';
  return null;
}

/** `s` as Postgres can store it: U+0000 dropped, a lone surrogate replaced with U+FFFD. */
export function storableText(s: string): string {
  const v = s.includes('\0') ? s.replaceAll('\0', '') : s;
  return v.isWellFormed() ? v : v.toWellFormed();
}

/**
 * The first `max` UTF-16 units of `s`, one fewer when the cut would fall inside a surrogate pair,
 * so the result is always well-formed when `s` is.
 */
export function sliceUnits(s: string, max: number): string {
  if (s.length <= max) return s;
  if (max <= 0) return '';
  const last = s.charCodeAt(max - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
