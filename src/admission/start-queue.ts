// The starts waiting for a place under the limit (limit.ts), and the judgement of that wait. A burst
// is let in and drains; a flood is told from it by how long the oldest waiting start has waited, not
// by how many wait (CoDel's sojourn time): once the oldest has waited longer than INTERVAL the starts
// come faster than they go, and new ones are refused until the queue is back within TARGET (as CoDel
// leaves its dropping state), so a flood meets a 503 at once rather than a wait that grows. A start
// whose predicted wait is past MAX_WAIT is refused too: a burst bigger than the instance can take in a
// few seconds gets the part it can.
//
// Adaptive LIFO ("Fail at Scale"): while the queue stands (its oldest start has waited past TARGET)
// each user's newest start goes first, since its client is the likeliest to still be waiting for it.
// The oldest pay for it: while the queue sheds, a start that has waited past MAX_WAIT (the longest
// wait a start is taken for) is dropped (`drop`: ended with the overload refusal) rather than sent
// late. Not sooner: a taken stream's head has gone out by then (its client sees a 200 stream end with
// an `error`, not a 503 it would retry), so a drop costs what a cut costs; the bench's flood cut 70 of
// its 200 running streams' opens when the bound was INTERVAL. A burst with nothing arriving after it
// never enters the shedding state: all of it is served, newest first.
//
// Fair between users: each user's starts wait in their own line and the lines take turns, so one
// user's thousand waiting starts do not stand in front of another's one; and while the queue sheds, a
// user holding less than an equal share of it is not refused for the others' flood. Pure: the time
// is handed in.

export interface QueueTuning {
  /** Shedding ends once the oldest waiting start has waited no longer than this. */
  targetMs: number;
  /** Shedding begins once the oldest waiting start has waited longer than this. */
  intervalMs: number;
  /** A start predicted to wait longer than this is refused. */
  maxWaitMs: number;
}

export const QUEUE_DEFAULTS: Readonly<QueueTuning> = Object.freeze({ targetMs: 100, intervalMs: 2000, maxWaitMs: 10_000 });

/**
 * One user's waiting starts, oldest first: arrays with a moving head (served from either end, so a start
 * in and out allocates nothing once warm). A start withdrawn from the middle leaves a hole (`GONE`),
 * skipped at either end.
 */
interface Line<T> {
  owner: string;
  items: (T | typeof GONE)[];
  at: number[];
  head: number;
  /** Its starts (holes not counted). */
  waiting: number;
}

const GONE: unique symbol = Symbol('withdrawn');

export class StartQueue<T> {
  private readonly t: QueueTuning;
  private readonly lines = new Map<string, Line<T>>();
  /** The lines with starts waiting, in turn order. */
  private readonly turns: Line<T>[] = [];
  private turn = 0;
  /** Starts waiting, all users. */
  length = 0;
  /** CoDel's state: refusing until the oldest waiting start is back within targetMs. */
  private sheddingNow = false;

  constructor(tuning: Partial<QueueTuning> = {}) {
    this.t = { ...QUEUE_DEFAULTS, ...tuning };
  }

  /** `item` of `owner` waits from `now`. */
  push(item: T, owner: string, now: number): void {
    let line = this.lines.get(owner);
    if (line === undefined) {
      line = { owner, items: [], at: [], head: 0, waiting: 0 };
      this.lines.set(owner, line);
      this.turns.push(line);
    }
    line.items.push(item);
    line.at.push(now);
    line.waiting++;
    this.length++;
  }

  /**
   * The next start by turns, or undefined: each user's oldest first, or its newest while the queue
   * stands (its oldest start has waited past targetMs as of `now`; without `now`, oldest first).
   */
  shift(now = -Infinity): T | undefined {
    if (this.length === 0) return undefined;
    const newest = now - this.oldestSince() > this.t.targetMs;
    if (this.turn >= this.turns.length) this.turn = 0;
    const line = this.turns[this.turn]!;
    const item = newest ? this.takeNewest(line) : this.takeOldest(line);
    if (!this.closeIfEmpty(line, this.turn)) this.turn++;
    return item;
  }

  /**
   * A start dropped, or undefined: while the queue sheds, the oldest start that has waited longer than
   * maxWaitMs as of `now`. Called until undefined after each change; counts nothing.
   */
  drop(now: number): T | undefined {
    if (!this.sheddingNow || this.length === 0) return undefined;
    for (let i = 0; i < this.turns.length; i++) {
      const line = this.turns[i]!;
      if (now - line.at[line.head]! <= this.t.maxWaitMs) continue;
      const item = this.takeOldest(line);
      if (this.closeIfEmpty(line, i) && i < this.turn) this.turn--;
      return item;
    }
    return undefined;
  }

  /** Takes `item` of `owner` out (its client stopped it while it waited): false when it is not waiting. */
  withdraw(item: T, owner: string): boolean {
    const line = this.lines.get(owner);
    if (line === undefined) return false;
    const at = line.items.indexOf(item, line.head);
    if (at < 0) return false;
    line.items[at] = GONE;
    line.waiting--;
    this.length--;
    this.skipGone(line);
    const index = this.turns.indexOf(line);
    if (this.closeIfEmpty(line, index) && index < this.turn) this.turn--;
    return true;
  }

  private takeOldest(line: Line<T>): T {
    const item = line.items[line.head] as T;
    line.items[line.head] = GONE;
    line.head++;
    line.waiting--;
    this.length--;
    this.skipGone(line);
    return item;
  }

  private takeNewest(line: Line<T>): T {
    line.at.pop();
    const item = line.items.pop() as T;
    line.waiting--;
    this.length--;
    this.skipGone(line);
    return item;
  }

  /** Holes at either end go: the head and the tail of a line with starts are always starts. */
  private skipGone(line: Line<T>): void {
    while (line.head < line.items.length && line.items[line.head] === GONE) line.head++;
    while (line.items.length > line.head && line.items[line.items.length - 1] === GONE) {
      line.items.pop();
      line.at.pop();
    }
    // A line that never empties (a user always waiting) would grow without end: drop its gone head now and then.
    if (line.head >= 1024 && line.head * 2 >= line.items.length) {
      line.items.splice(0, line.head);
      line.at.splice(0, line.head);
      line.head = 0;
    }
  }

  /** Drops `line` (at `index` in the turns) once it has no start left: true when it did. */
  private closeIfEmpty(line: Line<T>, index: number): boolean {
    if (line.head < line.items.length) return false;
    this.lines.delete(line.owner);
    this.turns.splice(index, 1);
    if (this.length === 0) this.sheddingNow = false;
    return true;
  }

  /** Starts of `owner` waiting. */
  waitingFor(owner: string): number {
    return this.lines.get(owner)?.waiting ?? 0;
  }

  /** When the oldest waiting start came (Infinity when none waits). */
  private oldestSince(): number {
    let oldest = Infinity;
    for (let i = 0; i < this.turns.length; i++) {
      const line = this.turns[i]!;
      const at = line.at[line.head]!;
      if (at < oldest) oldest = at;
    }
    return oldest;
  }

  /** How long the oldest waiting start has waited (ms); 0 when none waits. */
  oldestWaitMs(now: number): number {
    return this.length === 0 ? 0 : now - this.oldestSince();
  }

  /** True while a flood is judged to last (the CoDel state as of the last `refuses`). */
  get shedding(): boolean {
    return this.sheddingNow;
  }

  /**
   * Whether a new start of `owner` would be refused now, the starts leaving at `ratePerMs` (0: not
   * known yet, no prediction). Moves the shedding state; counts nothing.
   */
  refuses(owner: string, now: number, ratePerMs: number): boolean {
    if (this.length === 0) {
      this.sheddingNow = false;
      return false;
    }
    const oldest = this.oldestWaitMs(now);
    if (this.sheddingNow ? oldest <= this.t.targetMs : oldest > this.t.intervalMs) this.sheddingNow = !this.sheddingNow;
    const mine = this.waitingFor(owner);
    const lines = this.lines.size + (mine === 0 ? 1 : 0);
    // At least an equal share of the waiting starts: this user is (part of) the flood.
    if (this.sheddingNow && mine > 0 && mine * lines >= this.length) return true;
    // Taking turns, this start goes after the user's own waiting ones and, ahead of each, one of every other line's.
    return ratePerMs > 0 && Math.min((mine + 1) * lines, this.length + 1) / ratePerMs > this.t.maxWaitMs;
  }
}
