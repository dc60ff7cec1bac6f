// Per-simulator state (two simulators in one process must not share stored responses or controls)
// and the context every route handler receives.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DefaultReply } from './default-reply.ts';
import { Faults } from './faults.ts';
import { Gates } from './gates.ts';
import type { Turn } from './script.ts';

/** Map keeps insertion order, so re-inserting on access makes the first key the least recent. */
export class Lru<V> {
  private map = new Map<string, V>();
  constructor(private readonly max: number) {}

  get(key: string): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as string);
  }

  get size(): number {
    return this.map.size;
  }

  clear(): void {
    this.map.clear();
  }
}

export interface StoredResponse {
  /** The whole conversation up to and including this response's output. */
  turns: Turn[];
  /** call_ids of the function calls in this response's output, which the next input must answer. */
  pendingCalls: string[];
  /** system/developer message texts of the conversation (instructions are not inherited). */
  system: string[];
  response: Record<string, unknown>;
}

export const UPSTREAMS = [
  'provider_a',
  'provider_b',
  'provider_c',
  'provider_d',
  'engine_a',
  'engine_b',
  'engine_b_nojson',
  'pages',
] as const;
export type Upstream = (typeof UPSTREAMS)[number];

export class SimState {
  readonly responses = new Lru<StoredResponse>(10_000);
  /** provider_b's prompt cache: the prefixes written, by hash (prompt-cache.ts). */
  readonly promptCache = new Lru<true>(10_000);
  failModels = new Set<string>();
  readonly gates = new Gates();
  /** Failures set by `POST /sim/faults`, and the attempt counts of `failAttempts`. */
  readonly faults = new Faults();
  constructor(readonly defaultReply: DefaultReply) {}

  resetControls(): void {
    this.failModels = new Set();
    this.faults.clear();
  }
}

export interface Ctx {
  req: IncomingMessage;
  res: ServerResponse;
  /** Parsed JSON body (undefined when empty; a ParseFailure when not JSON). */
  body: unknown;
  /** Path below the upstream's base URL, e.g. `/responses` or `/v1/messages`. */
  path: string;
  query: URLSearchParams;
  upstream: Upstream;
  state: SimState;
  retryCount: string | undefined;
  /** The request body as received (identical retries are counted by it). */
  raw: Buffer;
}
