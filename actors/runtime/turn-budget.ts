// Work handed to a thread in one piece (a batch of sinks to write, a turn's messages from the main
// thread) is done in slices of about a budget of milliseconds, each in its own turn, so that the I/O
// waiting meanwhile (a start to refuse, the running streams' provider text) is not held behind all
// of it. One function, so the two places that slice their work slice it the same way.

/**
 * Hands items[from], items[from + 1], … to `handle`, in order, until every item is handled or
 * `budgetMs` has passed since the call (looked at every `checkEvery` items). Returns the index of the
 * first item not handled: items.length when all were.
 */
export function handleWithin<T>(items: readonly T[], from: number, handle: (item: T) => void, budgetMs: number, checkEvery = 1): number {
  const until = performance.now() + budgetMs;
  let i = from;
  while (i < items.length) {
    handle(items[i++]!);
    if ((i - from) % checkEvery === 0 && i < items.length && performance.now() >= until) return i;
  }
  return i;
}
