// What a supervisor is made with: its hosts (made by a factory, spoken to through a port), the kinds'
// error frames, its limits and hooks; and the counts it keeps for metrics.
import type { Batch, KindOf, RunResult, RunTypeMap, RuntimeLog, ToHost } from './protocol.ts';
import type { RunInfo } from './registry.ts';
import type { StartPacer } from './start-pacing.ts';

export interface HostPort {
  send(msg: ToHost): void;
  terminate(): Promise<void>;
  /** Settles when the host can run actors (a worker has loaded its code and resources). */
  ready: Promise<void>;
}

/** Makes host number `index`; it reports batches and its own death through the callbacks. */
export type HostFactory = (index: number, onBatch: (batch: Batch) => void, onExit: (error: Error) => void) => HostPort;

export interface SupervisorStats {
  eventsSent: number;
  slowClientsDropped: number;
}

export interface SupervisorOptions<T extends RunTypeMap = RunTypeMap> {
  hosts: number;
  /**
   * Each kind's terminal `error` event (RunDefinition.errorFrame), for the runs the supervisor ends
   * itself (a dead host, a failed replay): a client sees its kind's shape whoever ended the run.
   */
  errorFrames: { [K in KindOf<T>]: (message: string) => string };
  factory: HostFactory;
  maxActiveRuns: number;
  log: RuntimeLog;
  onEnd?: (run: RunInfo, result: RunResult) => void;
  /**
   * A host died with these runs on it, before they are ended (each then gets onEnd): what they had
   * stored is to be recovered as a crash's would be, since nothing of theirs runs any more.
   */
  onHostLost?: (runs: RunInfo[]) => void;
  /** Decides every new run (draining, capacity, overload) and paces their starts; without it only maxActiveRuns decides and every start goes at once. */
  admission?: StartPacer;
  /** A run's `startedAt` (milliseconds since the epoch); the system's clock unless a test scripts it. */
  clock?: { now(): number };
  /** A new run's id; random unless a test scripts it. */
  newId?: () => string;
}
