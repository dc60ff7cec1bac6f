// Verified tokens, so a client that sends the same JWT on every request pays one signature check per
// token rather than one per request. Keyed by the token's SHA-256 so the map holds no bearer secrets.
// Bounded: when full, the oldest inserted goes (Map keeps insertion order). Tokens from one provider
// share a lifetime, so the oldest is usually the first to expire anyway, and eviction stays O(1).
import { createHash } from 'node:crypto';

export interface Expiring {
  /** Seconds since the epoch (the token's `exp`). */
  expiresAt: number;
}

export class TokenCache<T extends Expiring> {
  readonly #entries = new Map<string, T>();

  constructor(
    readonly maxEntries: number,
    private readonly now: () => number,
  ) {}

  get size(): number {
    return this.#entries.size;
  }

  key(token: string): string {
    return createHash('sha256').update(token).digest('base64url');
  }

  /** The entry while its token has not expired; an expired one is dropped. */
  get(key: string): T | undefined {
    const entry = this.#entries.get(key);
    if (entry && this.#expired(entry)) {
      this.#entries.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Keeps `entry` until its `expiresAt`; one already expired (accepted within leeway) is not kept. */
  set(key: string, entry: T): void {
    if (this.#expired(entry)) return;
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(key, entry);
  }

  clear(): void {
    this.#entries.clear();
  }

  #expired(entry: T): boolean {
    return entry.expiresAt * 1000 <= this.now();
  }
}
