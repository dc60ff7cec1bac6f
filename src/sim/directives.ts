// The `SIM {json}` line a test puts in a prompt (or an engine query) to script the simulator.
// Parsing is strict about types so a typo in a test shows up as a visible error reply instead of
// silently falling back to the default answer.
import { isObject } from './http.ts';

export type FailMode = 'event' | 'disconnect' | 'failed';

export interface ToolScript {
  name: string;
  args: Record<string, unknown>;
}

export interface Directive {
  reply?: string;
  /** The answer (`reply` or the default) repeated, space-joined, and cut to exactly this many characters: a long answer from a short prompt. */
  replyChars?: number;
  deltas?: number;
  rate?: number;
  stamp?: boolean;
  tools?: ToolScript[];
  toolRounds?: number;
  status?: number;
  retryAfter?: number;
  retryAfterMs?: number;
  failAttempts?: number;
  /** Close the connection before any response instead of answering (with `failAttempts`: that many times). */
  reset?: boolean;
  /** The scripted failures (`status`, `reset`, `failAfter`) hit only these upstreams; the others answer. */
  failOn?: string[];
  failAfter?: number;
  failMode?: FailMode;
  firstByteDelayMs?: number;
  /** Held (after any delay) before the status line until the test opens the gate of this name. */
  gate?: string;
  /** With `gate`: a stream sends this many deltas first and holds there instead. */
  gateAfter?: number;
  /** With `gate`: a stream holds after every this many deltas, the k-th time at gate `${gate}-${k}`. */
  gateEvery?: number;
  custom?: boolean;
  usage?: { input?: number; output?: number; cached?: number };
  noUsage?: boolean;
  echoSystem?: boolean;
  echoInput?: boolean;
  searchStatus?: number;
  answerStatus?: number;
  searchDelayMs?: number;
  answerDelayMs?: number;
  searchGate?: string;
  answerGate?: string;
}

export interface ParsedDirective {
  directive: Directive;
  /** Why the SIM line was rejected; the provider replies with this text so the test sees it. */
  error: string | null;
  /** The text with every SIM line removed (used for default replies and engine queries). */
  rest: string;
}

// A directive line may sit anywhere in the text; for engine queries (single line) it may follow
// other words, so the match is "SIM {" up to the end of that line.
const SIM_RE = /(?:^|[ \t])SIM (\{[^\n]*\})[ \t]*\r?$/m;
const SIM_ALL = /(?:^|[ \t])SIM \{[^\n]*\}[ \t]*\r?$/gm;

const NUMBER_FIELDS = [
  'deltas',
  'replyChars',
  'rate',
  'toolRounds',
  'status',
  'retryAfter',
  'retryAfterMs',
  'failAttempts',
  'failAfter',
  'firstByteDelayMs',
  'gateAfter',
  'gateEvery',
  'searchStatus',
  'answerStatus',
  'searchDelayMs',
  'answerDelayMs',
] as const;
const BOOL_FIELDS = ['stamp', 'custom', 'echoSystem', 'echoInput', 'noUsage', 'reset'] as const;
const GATE_FIELDS = ['gate', 'searchGate', 'answerGate'] as const;
const KNOWN = new Set<string>([
  ...NUMBER_FIELDS,
  ...BOOL_FIELDS,
  ...GATE_FIELDS,
  'reply',
  'tools',
  'failMode',
  'failOn',
  'usage',
]);

const EMPTY: ParsedDirective = { directive: {}, error: null, rest: '' };

export function parseDirective(text: string): ParsedDirective {
  if (!text.includes('SIM {')) return text === '' ? EMPTY : { directive: {}, error: null, rest: text };
  const m = SIM_RE.exec(text);
  if (!m) return { directive: {}, error: null, rest: text };
  const rest = text.replace(SIM_ALL, '').trim();
  let raw: unknown;
  try {
    raw = JSON.parse(m[1]!);
  } catch (e) {
    return { directive: {}, error: `SIM directive is not valid JSON: ${(e as Error).message}`, rest };
  }
  const checked = validate(raw);
  return typeof checked === 'string'
    ? { directive: {}, error: `SIM directive error: ${checked}`, rest }
    : { directive: checked, error: null, rest };
}

function validate(raw: unknown): Directive | string {
  if (!isObject(raw)) return 'expected a JSON object';
  for (const k of Object.keys(raw)) if (!KNOWN.has(k)) return `unknown field '${k}'`;
  for (const k of NUMBER_FIELDS) {
    const v = raw[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) {
      return `'${k}' must be a non-negative number`;
    }
  }
  for (const k of BOOL_FIELDS) {
    if (raw[k] !== undefined && typeof raw[k] !== 'boolean') return `'${k}' must be a boolean`;
  }
  for (const k of GATE_FIELDS) {
    if (raw[k] !== undefined && (typeof raw[k] !== 'string' || raw[k] === '')) return `'${k}' must be a non-empty string`;
  }
  if (raw.gateAfter !== undefined && raw.gate === undefined) return `'gateAfter' needs a 'gate'`;
  if (raw.gateEvery !== undefined && raw.gate === undefined) return `'gateEvery' needs a 'gate'`;
  if (raw.gateEvery !== undefined && raw.gateAfter !== undefined) return `'gateEvery' and 'gateAfter' exclude each other`;
  if (raw.gateEvery !== undefined && (!Number.isInteger(raw.gateEvery) || (raw.gateEvery as number) < 1)) return `'gateEvery' must be a positive integer`;
  if (raw.reply !== undefined && typeof raw.reply !== 'string') return `'reply' must be a string`;
  if (raw.replyChars !== undefined && (!Number.isInteger(raw.replyChars) || (raw.replyChars as number) < 1)) {
    return `'replyChars' must be a positive integer`;
  }
  if (raw.deltas !== undefined && (!Number.isInteger(raw.deltas) || (raw.deltas as number) < 1)) {
    return `'deltas' must be a positive integer`;
  }
  if (raw.failMode !== undefined && !['event', 'disconnect', 'failed'].includes(raw.failMode as string)) {
    return `'failMode' must be "event", "disconnect" or "failed"`;
  }
  if (raw.status !== undefined && ((raw.status as number) < 400 || (raw.status as number) > 599)) {
    return `'status' must be an HTTP error status (400-599)`;
  }
  if (raw.failOn !== undefined && (!Array.isArray(raw.failOn) || !raw.failOn.every((u) => typeof u === 'string'))) {
    return `'failOn' must be an array of upstream names`;
  }
  if (raw.usage !== undefined) {
    const u = raw.usage;
    if (!isObject(u)) return `'usage' must be an object`;
    for (const k of ['input', 'output', 'cached'] as const) {
      if (u[k] !== undefined && (!Number.isInteger(u[k]) || (u[k] as number) < 0)) {
        return `'usage.${k}' must be a non-negative integer`;
      }
    }
  }
  if (raw.tools !== undefined) {
    if (!Array.isArray(raw.tools) || raw.tools.length === 0) return `'tools' must be a non-empty array`;
    for (const t of raw.tools) {
      if (!isObject(t) || typeof t.name !== 'string' || t.name === '') return `each tool needs a 'name'`;
      if (t.args !== undefined && !isObject(t.args)) return `tool '${t.name}': 'args' must be an object`;
    }
  }
  const d = raw as Directive;
  if (d.tools) d.tools = d.tools.map((t) => ({ name: t.name, args: t.args ?? {} }));
  return d;
}
