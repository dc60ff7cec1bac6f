// When the end of a stored response is written. The instance that ran a response writes its end a moment
// after its run ended (responses.ts; after a takeover, the peer that continued it: run-ends.ts), so
// a read in between finds no run and no end yet. It waits to hear the end announced here instead of polling
// the database: by this instance's own write at once, and by another instance's through the cluster (a
// broadcast, as users' revocations are announced: src/service/users.ts). The native API has no such gap:
// its run stores the answer before it ends.
import type { Logger } from 'pino';
import type { Cluster } from '../cluster/cluster.ts';

const TOPIC = 'openai-response-ends';

/** A wait for one response's end: `heard` is true once it is announced, false once given up (`ms`, or stop). */
export interface EndWait {
  heard: Promise<boolean>;
  stop(): void;
}

export class ResponseEnds {
  private readonly waits = new Map<string, Set<(heard: boolean) => void>>();
  private cluster: Cluster | null = null;

  constructor(private readonly log: Logger) {}

  /** Cluster mode: hear the other instances' ends. Missed ones (Redis was away) wake every wait to read again. */
  async useCluster(cluster: Cluster): Promise<void> {
    await cluster.listenTo(TOPIC, (id) => this.wake(id), () => {
      for (const id of [...this.waits.keys()]) this.wake(id);
    });
    this.cluster = cluster;
  }

  /** The end of response `id` is written: its waits here wake, and every other instance's. */
  written(id: string): void {
    this.wake(id);
    this.cluster?.broadcast(TOPIC, id).catch((err: unknown) => this.log.warn({ err, responseId: id }, 'the end of an OpenAI response was not announced to the cluster'));
  }

  /**
   * Waits up to `ms` for the end of `id` to be announced. Taken before reading the row, so that an end
   * written between that read and the wait is heard, not missed.
   */
  wait(id: string, ms: number): EndWait {
    let settle!: (heard: boolean) => void;
    const heard = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => settle(false), ms);
      settle = (h) => {
        clearTimeout(timer);
        const set = this.waits.get(id);
        set?.delete(settle);
        if (set?.size === 0) this.waits.delete(id);
        resolve(h);
      };
    });
    let set = this.waits.get(id);
    if (!set) this.waits.set(id, (set = new Set()));
    set.add(settle);
    return { heard, stop: () => settle(false) };
  }

  private wake(id: string): void {
    const set = this.waits.get(id);
    if (set) for (const settle of [...set]) settle(true);
  }
}
