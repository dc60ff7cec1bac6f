// Writes that must land although the database is down when they are first tried: a run's failure
// (its client already got the terminal event) must not leave its LlmCall `running`. The write is
// tried at once; on a connection-level failure it is queued and retried in the background, oldest
// first, with one shared exponential backoff: while the database is away the whole queue waits on a
// single probe write instead of every write hammering a refused port, and once that probe lands the
// rest follow at once. Bounded: a write still failing after `giveUpAfterMs` is dropped and reported
// (the heartbeat sweeper, src/service/heartbeat.ts, then fails the call when this instance stops).
// One queue per server, built in its composition root (src/app/app.ts) for its inline hosts and the
// outcomes of its keyed runs (src/service/idempotent-start.ts), and one per actor worker thread
// (src/domain/run-deps.ts), which serves a single server.
// Queued writes must be idempotent: a first attempt may have landed although its reply was lost.

export interface RetryPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
  giveUpAfterMs: number;
  /** Writes kept at most; past it the oldest is dropped (and reported). */
  maxPending: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  firstDelayMs: 250,
  maxDelayMs: 5000,
  giveUpAfterMs: 30 * 60_000,
  maxPending: 100_000,
};

/** The write; `sinceFirstTryMs` lets it date its effect to the first attempt rather than to now. */
export type DurableWrite = (sinceFirstTryMs: number) => Promise<unknown>;

export type RetryReport = { event: 'queued' | 'written' | 'dropped'; label: string; error?: string };

interface Pending {
  label: string;
  write: DurableWrite;
  firstTry: number;
}

// SQLSTATE classes that mean "not now" rather than "never": connection exceptions (08), operator
// intervention such as a shutdown or a server still starting (57), insufficient resources (53),
// transaction rollbacks from serialization or deadlock (40).
const TRANSIENT_SQLSTATE = /^(08|57|53|40)/;

/**
 * True for failures that retrying can cure: no connection, a server going down or starting up.
 * Errors that Postgres raised for the statement itself (a missing table, bad data) are permanent.
 */
export function isTransientDbError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return TRANSIENT_SQLSTATE.test(code);
  // No SQLSTATE: a socket error (ECONNREFUSED, ECONNRESET, …), "Connection terminated unexpectedly",
  // a connect timeout. None of these came from the statement.
  return true;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class WriteRetryQueue {
  private readonly queue: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  private delayMs: number;
  private running = false;
  private idle: Array<() => void> = [];

  constructor(
    private readonly policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    private readonly report: (r: RetryReport) => void = defaultReport,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.delayMs = policy.firstDelayMs;
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * Runs `write` now. Resolves 'written' when it landed, 'queued' when the database could not be
   * reached (it is retried in the background); rejects with a permanent error.
   */
  async write(label: string, write: DurableWrite): Promise<'written' | 'queued'> {
    const firstTry = this.clock();
    try {
      await write(0);
      return 'written';
    } catch (err) {
      if (!isTransientDbError(err)) throw err;
      this.enqueue({ label, write, firstTry }, messageOf(err));
      return 'queued';
    }
  }

  /** Resolves true once nothing is pending, false when `timeoutMs` passes first. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.queue.length === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      // Ref'd, unlike the retry timer: whoever drains chose to wait this long.
      const timer = setTimeout(() => {
        this.idle.splice(this.idle.indexOf(done), 1);
        resolve(false);
      }, timeoutMs);
      this.idle.push(done);
    });
  }

  private enqueue(p: Pending, error: string): void {
    if (this.queue.length >= this.policy.maxPending) {
      const dropped = this.queue.shift()!;
      this.report({ event: 'dropped', label: dropped.label, error: 'too many writes waiting for the database' });
    }
    this.queue.push(p);
    this.report({ event: 'queued', label: p.label, error });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.running) return;
    this.timer = setTimeout(() => void this.round(), this.delayMs);
    // A process that is stopping does not wait for the database to come back.
    this.timer.unref();
  }

  private async round(): Promise<void> {
    this.timer = null;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const head = this.queue[0]!;
        const age = this.clock() - head.firstTry;
        try {
          await head.write(age);
          this.report({ event: 'written', label: head.label });
        } catch (err) {
          if (isTransientDbError(err) && age < this.policy.giveUpAfterMs) {
            this.delayMs = Math.min(this.delayMs * 2, this.policy.maxDelayMs);
            return;
          }
          this.report({ event: 'dropped', label: head.label, error: messageOf(err) });
        }
        this.queue.shift();
        // Progress: the database answers again, so the next outage starts from the short delay.
        this.delayMs = this.policy.firstDelayMs;
      }
      for (const resolve of this.idle.splice(0)) resolve();
    } finally {
      this.running = false;
      if (this.queue.length > 0) this.schedule();
    }
  }
}

function defaultReport(r: RetryReport): void {
  // Only the loss of a write is worth a line: queued writes are expected during an outage.
  if (r.event === 'dropped') process.emitWarning(`gave up writing ${r.label}: ${r.error}`, 'DatabaseWriteDropped');
}
