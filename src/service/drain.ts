// Drain instead of cut (SIGTERM): the instance stops taking new runs and says so to balancers at
// once, lets the runs it has go to their natural end (attach, stop and idempotent retries keep
// working, and in a cluster its leases and its serving of other instances stay), and closes when the
// last one has ended. At the grace's end, or on a second signal, the runs still going are cut: each
// ends with an error and keeps what it streamed (stored as interrupted).
import type { Logger } from 'pino';
import type { RunSupervisor } from '../../actors/runs.ts';
import { DRAINING_MESSAGE, type Admission } from '../admission/admission.ts';
import type { Readiness } from './readiness.ts';

export const SHUTDOWN_MESSAGE = 'run cancelled: server is shutting down';

export interface DrainParts {
  admission: Admission;
  readiness: Readiness;
  supervisor: RunSupervisor;
  log: Logger;
  /** Closes the listener, the cluster membership, the database: called once the runs are over. */
  close(): Promise<void>;
}

export class Drain {
  private requestCut!: () => void;
  private readonly cutRequested = new Promise<'cut'>((resolve) => (this.requestCut = () => resolve('cut')));
  private running: Promise<void> | null = null;

  constructor(private readonly parts: DrainParts) {}

  /** The first signal: drain for at most `graceMs`, then close. 0: cut at once (the stop before drains existed). */
  run(graceMs: number): Promise<void> {
    return (this.running ??= this.drain(graceMs));
  }

  /** A second signal: cut the runs still going now. */
  cut(): void {
    this.requestCut();
  }

  private async drain(graceMs: number): Promise<void> {
    const { admission, readiness, supervisor, log, close } = this.parts;
    admission.drain();
    readiness.drain(DRAINING_MESSAGE);
    if (graceMs === 0) return close();
    log.info({ activeRuns: supervisor.activeCount, graceMs }, 'draining: new runs are refused, running ones go on');
    let timer: NodeJS.Timeout | undefined;
    const graceOver = new Promise<'grace'>((resolve) => (timer = setTimeout(() => resolve('grace'), graceMs)));
    const ended = await Promise.race([supervisor.whenIdle().then(() => 'idle' as const), graceOver, this.cutRequested]);
    clearTimeout(timer);
    if (ended !== 'idle') {
      const cut = supervisor.cancelAll('shutdown', SHUTDOWN_MESSAGE);
      log.warn({ cut, reason: ended === 'grace' ? 'the grace period ended' : 'a second signal' }, 'drain: cutting the runs still going');
    } else {
      log.info('drained: every run has ended');
    }
    await close();
  }
}
