// What a run's snapshot must be: plain data, which JSON keeps as it is.

/**
 * The path of the first value in `value` that JSON would not keep as it is (a function, a class
 * instance such as an AbortController, an Error, a Date or a Map, a symbol, a bigint, a number that is
 * not finite), or null when there is none. `undefined` passes: JSON drops it, which means the same.
 */
export function notPlain(value: unknown, path = '$'): string | null {
  if (value === null || value === undefined || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : path;
  if (typeof value !== 'object') return `${path} (${typeof value})`;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const bad = notPlain(value[i], `${path}[${i}]`);
      if (bad) return bad;
    }
    return null;
  }
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return `${path} (${(value as object).constructor?.name ?? 'an instance'})`;
  for (const [k, v] of Object.entries(value)) {
    const bad = notPlain(v, `${path}.${k}`);
    if (bad) return bad;
  }
  return null;
}
