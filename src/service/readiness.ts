// Readiness for balancers (GET /ready): every check must answer within its deadline. The checks are
// a list so that deployments add theirs (cluster mode adds Redis). Concurrent probes share one
// round of checks, so a burst of probes costs one query, not one each.
import { withDeadline } from '../db/control-pool.ts';
import { describeError } from '../db/pool.ts';

export interface ReadinessCheck {
  /** Names the dependency in the 503 message, e.g. `database`. */
  name: string;
  /** Resolves when the dependency answers; rejects with the reason otherwise. */
  check(): Promise<unknown>;
}

export type ReadinessResult = { ready: true } | { ready: false; message: string };

/** How long one check may take before the instance counts as not ready. */
export const READY_DEADLINE_MS = 2000;

export class Readiness {
  private readonly checks: ReadinessCheck[] = [];
  private inFlight: Promise<ReadinessResult> | null = null;
  private draining: ReadinessResult | null = null;

  constructor(private readonly deadlineMs = READY_DEADLINE_MS) {}

  add(check: ReadinessCheck): void {
    this.checks.push(check);
  }

  /** From now on not ready, without asking anyone: balancers stop sending new work here at once. */
  drain(message: string): void {
    this.draining = { ready: false, message };
  }

  run(): Promise<ReadinessResult> {
    if (this.draining) return Promise.resolve(this.draining);
    return (this.inFlight ??= this.runAll().finally(() => (this.inFlight = null)));
  }

  private async runAll(): Promise<ReadinessResult> {
    const failures = await Promise.all(
      this.checks.map((c) =>
        withDeadline(c.check(), this.deadlineMs, c.name).then(
          () => null,
          (err: unknown) => `${c.name} unavailable: ${describeError(err)}`,
        ),
      ),
    );
    const failed = failures.filter((f) => f !== null);
    return failed.length === 0 ? { ready: true } : { ready: false, message: failed.join('; ') };
  }
}
