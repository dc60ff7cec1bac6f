// A run's live resources, owned by the runtime and named by handle: the run's state holds only the
// handle (a number), so the state stays plain data that a snapshot can carry (run-snapshot.ts). Three
// kinds: abort controllers (a run's calls end with them), timers (a message that comes back later),
// and opaque live objects the run opened (a provider session). A run's transitions reach them only
// through its io (abort, after, cancelTimer); its executors read them through the run's handle.
import type { Handle, Timers } from './io.ts';

export type { Handle } from './io.ts';

interface PendingTimer<M> {
  /** When it fires, on the run's clock (Timers.now). */
  readonly at: number;
  readonly msg: M;
  /** The clock's own handle (Timers.set). */
  readonly id: unknown;
}

/** What a snapshot keeps of a run's resources: plain data. */
export interface ResourcesSnapshot<M> {
  /** The next handle: a restored run never reuses one it handed out. */
  readonly next: Handle;
  /** Each controller, with the message of its abort's reason (null: not aborted). */
  readonly controllers: ReadonlyArray<readonly [Handle, string | null]>;
  /** Each pending timer: when it fires, and its message. */
  readonly timers: ReadonlyArray<readonly [Handle, number, M]>;
  /**
   * The live objects' handles. A snapshot cannot carry them: a restore in the same process is handed
   * them (RunResources.live); elsewhere they are absent, and a run that needs one fails as a crash does.
   */
  readonly live: readonly Handle[];
}

// Made when first used (a search run uses none): a run's start allocates no table it does not need.
export class RunResources<M> {
  private next: Handle = 1;
  private controllers: Map<Handle, AbortController> | null = null;
  private objects: Map<Handle, unknown> | null = null;
  private timers: Map<Handle, PendingTimer<M>> | null = null;

  constructor(
    private readonly clock: Timers,
    private readonly tell: (msg: M) => void,
  ) {}

  /** A new controller's handle. */
  controller(): Handle {
    const h = this.next++;
    (this.controllers ??= new Map()).set(h, new AbortController());
    return h;
  }

  signalOf(h: Handle): AbortSignal {
    const c = this.controllers?.get(h);
    if (!c) throw new Error(`no controller ${h} in this run`);
    return c.signal;
  }

  /** Aborts the controller (the first reason wins, as with AbortController). */
  abort(h: Handle, reason: unknown): void {
    this.controllers?.get(h)?.abort(reason);
  }

  /** Keeps a live object the run opened; its handle goes in the state. */
  open(resource: unknown): Handle {
    const h = this.next++;
    (this.objects ??= new Map()).set(h, resource);
    return h;
  }

  resource<T>(h: Handle): T {
    const objects = this.objects;
    if (objects === null || !objects.has(h)) throw new Error(`no resource ${h} in this run`);
    return objects.get(h) as T;
  }

  /** `msg` is told after `ms`, unless cancelled (or the run ends) first. */
  after(ms: number, msg: M): Handle {
    const h = this.next++;
    this.arm(h, this.clock.now() + ms, ms, msg);
    return h;
  }

  cancelTimer(h: Handle): void {
    const t = this.timers?.get(h);
    if (t === undefined) return;
    this.timers!.delete(h);
    this.clock.clear(t.id);
  }

  /** The run ended: its timers are cleared (controllers and objects go with the run). */
  clearTimers(): void {
    if (this.timers === null) return;
    for (const t of this.timers.values()) this.clock.clear(t.id);
    this.timers.clear();
  }

  private arm(h: Handle, at: number, ms: number, msg: M): void {
    const timers = (this.timers ??= new Map());
    const id = this.clock.set(ms, () => {
      timers.delete(h);
      this.tell(msg);
    });
    timers.set(h, { at, msg, id });
  }

  snapshot(): ResourcesSnapshot<M> {
    const controllers: Array<readonly [Handle, string | null]> = [];
    for (const [h, c] of this.controllers ?? []) controllers.push([h, c.signal.aborted ? reasonMessage(c.signal.reason) : null]);
    const timers: Array<readonly [Handle, number, M]> = [];
    for (const [h, t] of this.timers ?? []) timers.push([h, t.at, t.msg]);
    return { next: this.next, controllers, timers, live: this.objects ? [...this.objects.keys()] : [] };
  }

  /**
   * The resources of a snapshot, made anew: controllers (an aborted one aborted again with its
   * message), timers armed for what is left of their time, and the live objects `live` hands over
   * (the same process's; absent ones stay absent). A controller `live` hands over is kept, not made
   * anew: the I/O it was given (a session's calls) still ends when the restored run aborts it.
   */
  static restore<M>(snap: ResourcesSnapshot<M>, clock: Timers, tell: (msg: M) => void, live?: ReadonlyMap<Handle, unknown>): RunResources<M> {
    const r = new RunResources(clock, tell);
    r.next = snap.next;
    for (const [h, aborted] of snap.controllers) {
      const kept = live?.get(h);
      const c = kept instanceof AbortController ? kept : new AbortController();
      if (aborted !== null && !c.signal.aborted) c.abort(new Error(aborted));
      (r.controllers ??= new Map()).set(h, c);
    }
    const now = clock.now();
    for (const [h, at, msg] of snap.timers) r.arm(h, at, Math.max(0, at - now), msg);
    for (const h of snap.live) if (live?.has(h)) (r.objects ??= new Map()).set(h, live.get(h));
    return r;
  }

  /** The live objects and the controllers, for a restore in the same process (RunResources.restore's `live`). */
  live(): ReadonlyMap<Handle, unknown> {
    return new Map<Handle, unknown>([...(this.objects ?? []), ...(this.controllers ?? [])]);
  }
}

const reasonMessage = (reason: unknown): string => (reason instanceof Error ? reason.message : String(reason));
