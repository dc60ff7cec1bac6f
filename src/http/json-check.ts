// One check over a parsed JSON body, before any schema, route or store sees it: every string and
// every key must be storable text (src/base/text.ts), and nesting stops at MAX_JSON_DEPTH, so deep input
// can overflow no recursive code later (JSON.stringify, zod, the pg driver). Iterative on purpose.
import { sliceUnits, textProblem } from '../base/text.ts';

/** Levels of nesting a JSON body may have; the body object itself is level 1. */
export const MAX_JSON_DEPTH = 64;

interface Frame {
  value: object;
  depth: number;
  parent: Frame | null;
  key: string | number;
}

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
const PATH_SEGMENTS_SHOWN = 6;

function segment(key: string | number): string {
  if (typeof key === 'number') return `[${key}]`;
  if (IDENTIFIER.test(key)) return `.${key}`;
  return `[${JSON.stringify(sliceUnits(key, 40))}]`;
}

/** `messages[0].metadata.a`, the way describeIssues names fields; long paths keep their start. */
function pathOf(frame: Frame | null, key?: string | number): string {
  const keys: Array<string | number> = key === undefined ? [] : [key];
  for (let f = frame; f && f.parent; f = f.parent) keys.push(f.key);
  keys.reverse();
  const shown = keys.slice(0, PATH_SEGMENTS_SHOWN).map(segment).join('');
  const path = shown.startsWith('.') ? shown.slice(1) : shown;
  return keys.length > PATH_SEGMENTS_SHOWN ? `${path}…` : path || 'body';
}

/** The first problem in `root` as `field: problem`, or null when the whole value is storable. */
export function jsonProblem(root: unknown, maxDepth = MAX_JSON_DEPTH): string | null {
  if (typeof root === 'string') {
    const p = textProblem(root);
    return p ? `body: ${p}` : null;
  }
  if (root === null || typeof root !== 'object') return null;
  const stack: Frame[] = [{ value: root, depth: 1, parent: null, key: '' }];
  while (stack.length > 0) {
    const frame = stack.pop()!;
    const value = frame.value;
    const isArray = Array.isArray(value);
    const keys = isArray ? null : Object.keys(value);
    const n = isArray ? (value as unknown[]).length : keys!.length;
    for (let i = 0; i < n; i++) {
      const key: string | number = isArray ? i : keys![i]!;
      if (!isArray) {
        const p = textProblem(key as string);
        if (p) return `${pathOf(frame, key)}: key ${p}`;
      }
      const v = (value as Record<string | number, unknown>)[key];
      if (typeof v === 'string') {
        const p = textProblem(v);
        if (p) return `${pathOf(frame, key)}: ${p}`;
      } else if (v !== null && typeof v === 'object') {
        if (frame.depth >= maxDepth) return `${pathOf(frame, key)}: nested deeper than the ${maxDepth}-level limit`;
        stack.push({ value: v, depth: frame.depth + 1, parent: frame, key });
      }
    }
  }
  return null;
}
