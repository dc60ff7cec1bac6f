// Failing on purpose: how a provider call of the simulator fails, decided by the call's SIM directive
// or by the faults a test or the bench set with `POST /sim/faults` (a provider browned out for N calls,
// for a time, or for a share of its calls). A fault set that way wins over the directive.
import { createHash } from 'node:crypto';
import { isObject } from './http.ts';
import type { Directive, FailMode } from './directives.ts';

export const FAULT_UPSTREAMS = ['provider_a', 'provider_b', 'provider_c', 'provider_d'] as const;
type ProviderUpstream = (typeof FAULT_UPSTREAMS)[number];
type Upstream = string;

/** A long `make run` session must not grow the attempt counts for ever; tests never get near this. */
const ATTEMPTS_MAX = 10_000;

/** One fault as `POST /sim/faults` takes it (src/sim/README.md documents it). */
export interface FaultSpec {
  upstream: ProviderUpstream;
  /** Answer with this status (and the provider's error body) before any byte of stream. */
  status?: number;
  /** Close the connection before any response (a reset, as a crashed upstream or a proxy does). */
  reset?: boolean;
  /** A text stream breaks after this many deltas (`failMode` says how). */
  dieAfter?: number;
  failMode?: FailMode;
  retryAfter?: number;
  retryAfterMs?: number;
  /** Only the next N calls of the upstream; unset: every call while the fault lasts. */
  count?: number;
  /** Only for this long from now. */
  forMs?: number;
  /** Only this share of the calls (1–100), spread evenly: with 30, the 4th, 7th and 10th of every 10 fail. */
  percent?: number;
}

/** What of a call the faults read (a route's Ctx has it). */
interface CallOf {
  upstream: Upstream;
  raw: Buffer;
  retryCount: string | undefined;
}

interface Fault extends FaultSpec {
  left: number;
  until: number;
  seen: number;
}

/** What one provider call does instead of answering normally. */
export type CallFailure =
  | { kind: 'status'; status: number; headers: Record<string, string> }
  | { kind: 'reset' }
  | { kind: 'die'; after: number; mode: FailMode | undefined };

export class Faults {
  private list: Fault[] = [];
  /** Calls seen per identical request, for `failAttempts` (forgotten past ATTEMPTS_MAX requests). */
  private readonly attempts = new Map<string, number>();

  set(specs: FaultSpec[]): void {
    const now = Date.now();
    this.list = specs.map((s) => ({ ...s, left: s.count ?? Infinity, until: s.forMs === undefined ? Infinity : now + s.forMs, seen: 0 }));
  }

  clear(): void {
    this.list = [];
    this.attempts.clear();
  }

  describe(): FaultSpec[] {
    const now = Date.now();
    return this.live(now).map(({ left, until, seen, ...spec }) => ({
      ...spec,
      ...(left !== Infinity && { count: left }),
      ...(until !== Infinity && { forMs: Math.max(0, until - now) }),
    }));
  }

  /**
   * This call's attempt number among identical requests (0 for the first), or the SDK's own retry
   * count (X-Stainless-Retry-Count) when it says more.
   */
  attempt({ upstream, raw, retryCount }: CallOf): number {
    const key = upstream + ':' + createHash('sha1').update(raw).digest('base64');
    const n = this.attempts.get(key) ?? 0;
    if (n === 0 && this.attempts.size >= ATTEMPTS_MAX) this.attempts.clear();
    this.attempts.set(key, n + 1);
    return Math.max(n, Number.parseInt(retryCount ?? '0', 10) || 0);
  }

  /** The fault that hits this call of `upstream`, if any (consumes a count). */
  hit(upstream: Upstream): CallFailure | null {
    const now = Date.now();
    for (const f of this.live(now)) {
      if (f.upstream !== upstream) continue;
      if (f.percent !== undefined) {
        const i = f.seen++;
        // Call i fails when it crosses the next multiple of 100 / percent: an even spread, no randomness.
        if (Math.floor(((i + 1) * f.percent) / 100) === Math.floor((i * f.percent) / 100)) continue;
      }
      f.left--;
      return failureOf(f);
    }
    return null;
  }

  private live(now: number): Fault[] {
    this.list = this.list.filter((f) => f.left > 0 && f.until > now);
    return this.list;
  }
}

function headersOf(s: { retryAfter?: number; retryAfterMs?: number }): Record<string, string> {
  const h: Record<string, string> = {};
  if (s.retryAfter !== undefined) h['retry-after'] = String(s.retryAfter);
  if (s.retryAfterMs !== undefined) h['retry-after-ms'] = String(s.retryAfterMs);
  return h;
}

function failureOf(f: FaultSpec): CallFailure {
  if (f.reset) return { kind: 'reset' };
  if (f.status !== undefined) return { kind: 'status', status: f.status, headers: headersOf(f) };
  return { kind: 'die', after: f.dieAfter ?? 0, mode: f.failMode };
}

/**
 * How this call fails: a fault set for its upstream, else its directive's `status` / `reset` (for
 * `failAttempts` calls of the same request, when set) and `failAfter`, unless `failOn` leaves its
 * upstream out. Null: it answers normally.
 */
export function callFailure(faults: Faults, call: CallOf, d: Directive): CallFailure | null {
  const hit = faults.hit(call.upstream);
  if (hit) return hit;
  if (d.failOn && !d.failOn.includes(call.upstream)) return null;
  if (d.status !== undefined || d.reset) {
    if (d.failAttempts === undefined || faults.attempt(call) < d.failAttempts) {
      return d.reset ? { kind: 'reset' } : { kind: 'status', status: d.status!, headers: headersOf(d) };
    }
  }
  if (d.failAfter !== undefined) return { kind: 'die', after: d.failAfter, mode: d.failMode };
  return null;
}

/** The directive a stream runs with: the failure's break point, or none. */
export function streamDirective(d: Directive, f: CallFailure | null): Directive {
  if (f?.kind === 'die') return { ...d, failAfter: f.after, failMode: f.mode };
  return d.failAfter === undefined ? d : { ...d, failAfter: undefined, failMode: undefined };
}

/** A reset: the connection closes before any response. */
export function resetConnection(res: { socket: { destroy(): void } | null }): void {
  res.socket?.destroy();
}

/** `POST /sim/faults`'s body: one fault, `{"faults": [...]}`, or `{"clear": true}`; a string says what is wrong. */
export function parseFaults(body: unknown): FaultSpec[] | string {
  if (!isObject(body)) return 'expected a JSON object';
  if (body.clear === true) return [];
  const items = Array.isArray(body.faults) ? body.faults : body.faults === undefined ? [body] : null;
  if (!items) return `'faults' must be an array`;
  const out: FaultSpec[] = [];
  for (const item of items) {
    const f = parseFault(item);
    if (typeof f === 'string') return f;
    out.push(f);
  }
  return out;
}

const FAULT_NUMBERS = ['status', 'dieAfter', 'retryAfter', 'retryAfterMs', 'count', 'forMs', 'percent'] as const;
const FAULT_KNOWN = new Set<string>([...FAULT_NUMBERS, 'upstream', 'reset', 'failMode']);

function parseFault(raw: unknown): FaultSpec | string {
  if (!isObject(raw)) return 'each fault must be an object';
  for (const k of Object.keys(raw)) if (!FAULT_KNOWN.has(k)) return `unknown fault field '${k}'`;
  if (!(FAULT_UPSTREAMS as readonly unknown[]).includes(raw.upstream)) return `'upstream' must be one of ${FAULT_UPSTREAMS.join(', ')}`;
  for (const k of FAULT_NUMBERS) {
    const v = raw[k];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0)) return `'${k}' must be a non-negative number`;
  }
  if (raw.reset !== undefined && typeof raw.reset !== 'boolean') return `'reset' must be a boolean`;
  const kinds = [raw.status !== undefined, raw.reset === true, raw.dieAfter !== undefined].filter(Boolean).length;
  if (kinds !== 1) return `a fault needs exactly one of 'status', 'reset' or 'dieAfter'`;
  if (raw.status !== undefined && ((raw.status as number) < 400 || (raw.status as number) > 599)) return `'status' must be an HTTP error status (400-599)`;
  if (raw.percent !== undefined && ((raw.percent as number) < 1 || (raw.percent as number) > 100)) return `'percent' must be from 1 to 100`;
  if (raw.failMode !== undefined && !['event', 'disconnect', 'failed'].includes(raw.failMode as string)) return `'failMode' must be "event", "disconnect" or "failed"`;
  return raw as unknown as FaultSpec;
}
