// A run as plain data: what a fallback, a takeover or a trace needs to hand a run over. The kind's
// state (which names its live resources by handle only), what the run has emitted (its replay), the
// cancel it was asked, and its resources as data (resources.ts). JSON.stringify keeps all of it;
// Actor.restore makes a run of it that goes on as the original would have.
import type { BufferSnapshot } from './event-buffer.ts';
import type { CancelWhy } from './protocol.ts';
import type { ResourcesSnapshot } from './resources.ts';

export interface RunSnapshot<S, M> {
  readonly runId: string;
  readonly state: S;
  readonly replay: BufferSnapshot;
  /** The first request to end early, or null. */
  readonly cancel: { readonly why: CancelWhy; readonly message: string } | null;
  readonly finished: boolean;
  /** The run's start was said settled (RunHandle.startSettled): a restore does not say it again. */
  readonly startSettled: boolean;
  /** When the run was made, on the runtime's clock. */
  readonly bornAt: number;
  readonly resources: ResourcesSnapshot<M>;
}
