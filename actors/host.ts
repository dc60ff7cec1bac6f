// An actor host: the actors of one thread (a worker, or the main thread when ACTOR_THREADS=0).
import { Actor, type RunFunction } from './actor.ts';
import { Outbox } from './outbox.ts';
import type { Batch, RunKind, ToHost } from './protocol.ts';

export type Runners<D> = Record<RunKind, RunFunction<D>>;

export interface Host {
  receive(msg: ToHost): void;
  /** Actors alive on this host (running, or ended and not yet released). */
  readonly size: number;
}

export function createHost<D>(runners: Runners<D>, deps: D, send: (batch: Batch) => void): Host {
  const outbox = new Outbox(send);
  const actors = new Map<string, Actor>();
  return {
    get size() {
      return actors.size;
    },
    receive(msg: ToHost): void {
      switch (msg.t) {
        case 'start': {
          const actor = new Actor(msg.runId, outbox);
          actors.set(msg.runId, actor);
          actor.run(runners[msg.kind], msg.request, deps);
          return;
        }
        case 'release':
          actors.delete(msg.runId);
          return;
        default: {
          const actor = actors.get(msg.runId);
          if (actor) actor.post(msg);
          else if (msg.t === 'attach') outbox.gone(msg.runId, msg.subId);
        }
      }
    },
  };
}
