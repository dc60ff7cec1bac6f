// An actor host: the actors of one thread (a worker, or the main thread when ACTOR_THREADS=0).
import { Actor, type RunFunction } from './actor.ts';
import { Outbox } from './outbox.ts';
import type { Batch, KindOf, RunTypeMap, ToHost } from './protocol.ts';

/** The run function of every kind, typed by the kind's request and value. */
export type Runners<T extends RunTypeMap, D> = { [K in KindOf<T>]: RunFunction<T[K]['request'], T[K]['value'], D> };

export interface Host {
  receive(msg: ToHost): void;
  /** Actors alive on this host (running, or ended and not yet released). */
  readonly size: number;
}

export function createHost<T extends RunTypeMap, D>(runners: Runners<T, D>, deps: D, send: (batch: Batch) => void): Host {
  const outbox = new Outbox(send);
  const actors = new Map<string, Actor>();
  // Requests cross the thread as plain data; the supervisor's typed start put the kind's request there.
  const byKind = runners as unknown as Record<string, RunFunction<unknown, unknown, D> | undefined>;
  return {
    get size() {
      return actors.size;
    },
    receive(msg: ToHost): void {
      switch (msg.t) {
        case 'start': {
          const fn = byKind[msg.kind];
          // Typed starts cannot name an unknown kind: this host runs other code than the supervisor
          // expects, so it must not go on. Its death ends its runs with an error; a fresh host follows.
          if (!fn) throw new Error(`unknown run kind ${msg.kind}`);
          const actor = new Actor(msg.runId, outbox);
          actors.set(msg.runId, actor);
          actor.run(fn, msg.request, deps);
          return;
        }
        case 'release':
          actors.delete(msg.runId);
          return;
        default: {
          const actor = actors.get(msg.runId);
          if (actor) actor.receive(msg);
          else if (msg.t === 'attach') outbox.gone(msg.runId, msg.subId);
        }
      }
    },
  };
}
