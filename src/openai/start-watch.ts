// A background response reads `queued` while its run waits its turn in the admission's start queue
// (src/admission/start-queue.ts), then `in_progress`: the run's first frame (`meta`, sent once the run has
// started on an actor thread) tells the façade, which marks the stored row. The façade asks nothing of the
// admission: a run held in its queue is one whose frames have not begun.
import type { Subscriber } from '../../actors/runtime/subscriber.ts';

export interface StartWatch {
  /** Settles when the run's first frame comes (never, for a run that ends before it starts). */
  readonly started: Promise<void>;
  /** Whether it has come. */
  readonly now: boolean;
  /** The first frame came (the creating stream's own reader calls it: ResponseEventStream.whenStarted). */
  heard(): void;
  /** A subscriber for a response nobody streams: it hears the first frame, then lets the run go on without it. */
  subscriber(): Subscriber;
}

export function startWatch(): StartWatch {
  let resolve!: () => void;
  const started = new Promise<void>((r) => (resolve = r));
  let now = false;
  const heard = () => {
    now = true;
    resolve();
  };
  return {
    started,
    get now() {
      return now;
    },
    heard,
    subscriber() {
      let hooks: Array<() => void> | null = [];
      const close = () => {
        const run = hooks;
        hooks = null;
        if (run) for (const h of run) h();
      };
      return {
        dropped: false,
        write() {
          if (now) return;
          heard();
          // Let go after the write that is under way, not from inside it.
          queueMicrotask(close);
        },
        end: close,
        onClose: (fn) => (hooks ? void hooks.push(fn) : fn()),
      };
    },
  };
}
