// Start and stop of a server in one place. Each start step that opens something registers at once how
// to close it; stop closes in the reverse order, since what opened later uses what opened before it
// (the runs use the database, the listener feeds the runs). A start that fails half-way closes what it
// had opened before its error goes on, so a failed start leaves no port, pool, thread or timer behind.

/** Closes one resource; may be async. */
export type CloseStep = () => unknown;

/** Told of each step as it closes: `err` set when that step failed (the others still close). */
export type CloseReport = (name: string, err?: unknown) => void;

export class Lifecycle {
  private readonly steps: Array<{ name: string; close: CloseStep }> = [];
  private closing: Promise<void> | undefined;

  constructor(private readonly report: CloseReport = () => {}) {}

  /** Registers how to close what was just opened: it closes before everything registered earlier. */
  defer(name: string, close: CloseStep): void {
    // A step registered after the stop began would never run: its resource would leak silently.
    if (this.closing) throw new Error(`${name} was opened while the server was stopping`);
    this.steps.push({ name, close });
  }

  /** Opens a resource and registers its close in one step; nothing is registered when `open` throws. */
  async open<T>(name: string, open: () => Promise<T> | T, close: (resource: T) => unknown): Promise<T> {
    const resource = await open();
    this.defer(name, () => close(resource));
    return resource;
  }

  /**
   * Closes everything, last opened first, once: later calls get the same promise. A step that fails is
   * reported and the ones after it still run (a stuck cluster must not keep the database open); the
   * first failure then rejects.
   */
  close(): Promise<void> {
    return (this.closing ??= this.closeAll());
  }

  /** Runs `start`; when it throws, closes what it had opened, then rethrows the start's own error. */
  async start<T>(start: (lifecycle: this) => Promise<T>): Promise<T> {
    try {
      return await start(this);
    } catch (err) {
      // A close failure is reported; the caller needs to know why the start failed, not what followed.
      await this.close().catch(() => {});
      throw err;
    }
  }

  private async closeAll(): Promise<void> {
    let failure: { err: unknown } | undefined;
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      try {
        await step.close();
        this.report(step.name);
      } catch (err) {
        this.report(step.name, err);
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  }
}
