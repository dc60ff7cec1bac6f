// provider_b's prompt cache as the Messages API keeps it: a request marks the end of a stable prefix
// with `cache_control` on a block; the prefix up to a marked block is written to the cache
// (`cache_creation_input_tokens`), and a later request whose prompt starts with a prefix cached before
// reads it (`cache_read_input_tokens`) instead of paying it as fresh input. As the API does, the
// longest cached prefix ending at any block boundary before the last mark is found, so a chat whose
// every turn marks its whole history reads the previous turn's prefix and writes only what was added.
// No minimum length and no expiry (the API's are 1,024 tokens and 5 minutes): tests need small prompts.
import { createHash, type Hash } from 'node:crypto';
import type { Lru } from './state.ts';

/** One content block of the prompt, in order: system blocks first, then each message's. */
export interface PromptBlock {
  /** What identifies the block's content (its role and JSON without `cache_control`). */
  key: string;
  /** Characters it adds to the prompt (4 per token, as the simulator counts input). */
  chars: number;
  /** The request put `cache_control` on it. */
  marked: boolean;
}

/** The cached part of a prompt, in tokens (their sum never passes `inputTokens`). */
export interface CacheUse {
  read: number;
  write: number;
}

const NONE: CacheUse = { read: 0, write: 0 };

/** Reads and writes `cache` for the prompt `blocks`, as one request does. */
export function usePromptCache(cache: Lru<true>, blocks: readonly PromptBlock[], inputTokens: number): CacheUse {
  let last = -1;
  for (let i = 0; i < blocks.length; i++) if (blocks[i]!.marked) last = i;
  if (last < 0) return NONE;
  const hashes: string[] = [];
  const ends: number[] = [];
  const h: Hash = createHash('sha256');
  let chars = 0;
  for (let i = 0; i <= last; i++) {
    h.update(blocks[i]!.key).update('\u0000');
    chars += blocks[i]!.chars;
    hashes.push(h.copy().digest('hex'));
    ends.push(chars);
  }
  let hit = -1;
  for (let i = last; i >= 0; i--) {
    if (cache.get(hashes[i]!)) {
      hit = i;
      break;
    }
  }
  for (let i = hit + 1; i <= last; i++) if (blocks[i]!.marked) cache.set(hashes[i]!, true);
  const readChars = hit < 0 ? 0 : ends[hit]!;
  const read = Math.min(inputTokens, Math.floor(readChars / 4));
  const write = Math.min(inputTokens - read, Math.floor(ends[last]! / 4) - read);
  return { read, write: Math.max(0, write) };
}
