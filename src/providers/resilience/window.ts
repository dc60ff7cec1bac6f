// Two counts per second over a sliding window of seconds (calls and failures for a breaker, calls and
// retries for a retry budget): the one windowed count both keep per provider (and model).

export class SecondCounts {
  /** Second → [first count, second count]. */
  private readonly bySecond = new Map<number, [number, number]>();

  constructor(private readonly windowS: number) {}

  /** The pair of the second of `nowMs`, after dropping the seconds that left the window. */
  at(nowMs: number): [number, number] {
    const sec = Math.floor(nowMs / 1000);
    for (const s of this.bySecond.keys()) if (s <= sec - this.windowS) this.bySecond.delete(s);
    let b = this.bySecond.get(sec);
    if (!b) this.bySecond.set(sec, (b = [0, 0]));
    return b;
  }

  /** Both counts summed over the window (as of the last `at`). */
  sum(): [number, number] {
    let first = 0;
    let second = 0;
    for (const [a, b] of this.bySecond.values()) {
      first += a;
      second += b;
    }
    return [first, second];
  }
}
