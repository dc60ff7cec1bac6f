// An actor host: the actors of one thread (a worker, or the main thread when ACTOR_THREADS=0).
import type { ActorRef, RunDefinition } from './actor.ts';
import { Outbox } from './outbox.ts';
import type { Batch, KindOf, RunTypeMap, ToHost } from './protocol.ts';

/** The run definition of every kind, typed by the kind's request and value. */
export type Runners<T extends RunTypeMap, D> = { [K in KindOf<T>]: RunDefinition<T[K]['request'], T[K]['value'], D> };

export interface Host {
  receive(msg: ToHost): void;
  /** Actors alive on this host (running, or ended and not yet released). */
  readonly size: number;
}

export function createHost<T extends RunTypeMap, D>(runners: Runners<T, D>, deps: D, send: (batch: Batch) => void): Host {
  const outbox = new Outbox(send);
  const actors = new Map<string, ActorRef>();
  // Requests cross the thread as plain data; the supervisor's typed start put the kind's request there.
  const byKind = runners as unknown as Record<string, RunDefinition<unknown, unknown, D> | undefined>;
  return {
    get size() {
      return actors.size;
    },
    receive(msg: ToHost): void {
      switch (msg.t) {
        case 'start': {
          const def = byKind[msg.kind];
          // Typed starts cannot name an unknown kind: this host runs other code than the supervisor
          // expects, so it must not go on. Its death ends its runs with an error; a fresh host follows.
          if (!def) throw new Error(`unknown run kind ${msg.kind}`);
          const actor = def.spawn(msg.runId, msg.request, deps, outbox);
          actors.set(msg.runId, actor);
          actor.tell({ t: 'start' });
          return;
        }
        case 'release':
          actors.delete(msg.runId);
          return;
        case 'attach': {
          const actor = actors.get(msg.runId);
          if (actor) actor.tell({ t: 'attach', subId: msg.subId });
          else outbox.gone(msg.runId, msg.subId);
          return;
        }
        case 'cancel': {
          const { why, message } = msg;
          actors.get(msg.runId)?.tell(why === 'stop' ? { t: 'stop', message } : { t: 'cancel', why, message });
        }
      }
    },
  };
}
