// Argument checks shared by the tools. Models send malformed arguments now and then; a ToolError
// that names the argument lets the model correct itself in the next round.
import { ToolError } from './types.ts';
import { sliceUnits } from '../base/text.ts';

export function requireString(tool: string, args: Record<string, unknown>, name: string): string {
  const v = args[name];
  if (typeof v !== 'string' || v.trim() === '') {
    throw new ToolError(`${tool}: argument "${name}" must be a non-empty string`);
  }
  return v;
}

/** An optional integer clamped into [min, max]; models often send 50 when 10 is the most we return. */
export function optionalInt(
  tool: string,
  args: Record<string, unknown>,
  name: string,
  bounds: { min: number; max: number; fallback: number },
): number {
  const v = args[name];
  if (v === undefined || v === null) return bounds.fallback;
  const n = typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n)) {
    throw new ToolError(`${tool}: argument "${name}" must be an integer`);
  }
  return Math.min(bounds.max, Math.max(bounds.min, Math.trunc(n)));
}

/** Cuts text to `max` characters and says so, so the model knows it did not see everything. */
export function capText(text: string, max: number, what = 'output'): string {
  if (text.length <= max) return text;
  return `${sliceUnits(text, max)}\n\n[${what} truncated: showing the first ${max} of ${text.length} characters]`;
}

/** One-line preview for the tool_call event. */
export function previewOf(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${sliceUnits(flat, max)}…` : flat;
}

/** The message of an unknown thrown value. */
export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
