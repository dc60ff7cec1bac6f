// The supervisor, on the main thread: the in-process core of the run registry (src/service/runs.ts adds the
// cluster). It keeps the one-run-per-key rule for every kind, places runs on actor hosts, and fans
// each run's pre-encoded frames out to its subscribers. Starting is synchronous, so two starts for one
// key can never both pass. A host that dies takes only its own runs down; they end with an `error` event.
import { randomUUID } from 'node:crypto';
import { sseFrame } from './frame.ts';
import type { Batch, CancelWhy, KindOf, RunOutcome, RunResult, RunTypeMap, RuntimeLog, ToHost } from './protocol.ts';
import type { RunHandle, RunInfo, Started, StartOptions, StartRefusal } from './registry.ts';
import type { Subscriber } from './subscriber.ts';

export interface HostPort {
  send(msg: ToHost): void;
  terminate(): Promise<void>;
  /** Settles when the host can run actors (a worker has loaded its code and resources). */
  ready: Promise<void>;
}

/** Makes host number `index`; it reports batches and its own death through the callbacks. */
export type HostFactory = (index: number, onBatch: (batch: Batch) => void, onExit: (error: Error) => void) => HostPort;

interface HostSlot {
  index: number;
  port: HostPort;
  runs: Set<Entry>;
  /** Starts sent to this host that it has not yet said it took up (Batch.started). */
  unheard: number;
}

interface Entry extends RunInfo {
  readonly subscribers: Set<Subscriber>;
  readonly result: Promise<RunResult>;
  resolve(result: RunResult): void;
  host: HostSlot;
  ended: boolean;
  cancelWhenAlone: boolean;
  /** While its start waits its turn (StartPacer): that start, then what else was meant for its host, in order. */
  held: ToHost[] | null;
}

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

/**
 * Decides whether a new run starts, and when its start goes to its host: a start beyond what the
 * hosts keep up with waits its turn (the service's adaptive admission, src/admission/). The
 * supervisor reports each start its host settled, with its latency; the frames of running runs are
 * handled before the starts that were waiting are sent.
 */
export interface StartPacer {
  /** Handed the supervisor when it is made: its run count and its starts in flight are the ones the pacer reads. */
  watchRuns(runs: { readonly activeCount: number; readonly startBacklog: number }): void;
  /** Null: the run may start; otherwise why not. */
  admit(active: number, owner?: string): StartRefusal | null;
  /**
   * The run `start` may go to its host now (true), or waits its turn (false): `next` hands it back.
   * The starts in flight are the supervisor's own count (`startBacklog`), which the pacer reads.
   */
  take(start: unknown, owner?: string): boolean;
  /** The waiting start whose turn has come, or undefined. */
  next(): unknown;
  /** A waiting start dropped (a flood that lasts, and it waited too long), to be ended with `refusal`; or undefined. */
  drop(): { start: unknown; refusal: StartRefusal } | undefined;
  /** Takes a waiting start out (its run is ended before it went): false when it is not waiting. */
  withdraw(start: unknown, owner?: string): boolean;
  /** A start sent to a host was settled, `ms` after its host made its run; `startBacklog` no longer counts it. */
  settled(ms: number): void;
}

export class Supervisor<T extends RunTypeMap> {
  private readonly byKey = new Map<string, Map<string, Entry>>();
  private readonly runs = new Map<string, Entry>();
  private readonly pending = new Map<number, { entry: Entry; sub: Subscriber }>();
  private readonly hosts: HostSlot[] = [];
  private readonly opts: SupervisorOptions<T>;
  private readonly clock: { now(): number };
  private readonly newId: () => string;
  private nextSubId = 1;
  private closing = false;
  readonly stats: SupervisorStats = { eventsSent: 0, slowClientsDropped: 0 };
  /** Callers of whenIdle, settled when the last active run ends. */
  private idleWaiters: Array<() => void> = [];

  constructor(opts: SupervisorOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? Date;
    this.newId = opts.newId ?? randomUUID;
    for (let i = 0; i < Math.max(1, opts.hosts); i++) this.hosts.push(this.spawn(i));
    opts.admission?.watchRuns(this);
  }

  /** Every host is ready: until then the first runs would wait for a worker's boot. */
  ready(): Promise<void> {
    return Promise.all(this.hosts.map((h) => h.port.ready)).then(() => undefined);
  }

  get activeCount(): number {
    return this.runs.size;
  }

  /**
   * Starts handed to the actor hosts and not yet settled: in a host's mailbox, being handled, for a
   * kind that settles its own start its first work not yet done (a chat's first statement), or
   * settled in a batch the main thread has not read yet: the starts in flight, which the
   * admission's limit bounds (a start beyond it waits its turn before it is sent).
   */
  get startBacklog(): number {
    let n = 0;
    for (let i = 0; i < this.hosts.length; i++) n += this.hosts[i]!.unheard;
    return n;
  }

  /** Synchronous: decided before the caller's next await, so a burst of starts for a key starts one run. */
  start<K extends KindOf<T>>(opts: StartOptions<T, K>): Started<K, T[K]['value']> {
    const { kind, key } = opts;
    if (this.closing) return { ok: false, outcome: 'shutting_down', message: 'server is shutting down' };
    const running = key === null ? undefined : this.keyed(kind).get(key);
    if (running) {
      if (opts.ifRunning === 'reject') return { ok: false, outcome: 'busy', message: `a ${kind} run is already active for ${key}` };
      if (opts.subscriber) this.attachEntry(running, opts.subscriber);
      return { ok: true, handle: this.handle<K, T[K]['value']>(running, true) };
    }
    if (opts.ifIdle) return opts.ifIdle;
    const refused = this.admit(opts.owner);
    if (refused) return refused;
    let slot = this.hosts[0]!;
    for (const h of this.hosts) if (h.runs.size < slot.runs.size) slot = h;
    let resolve!: (r: RunResult) => void;
    const result = new Promise<RunResult>((r) => (resolve = r));
    const entry: Entry = {
      runId: this.newId(),
      kind,
      key,
      label: opts.label ?? '',
      startedAt: this.clock.now(),
      ...(opts.owner === undefined ? {} : { owner: opts.owner }),
      subscribers: new Set(),
      result,
      resolve,
      host: slot,
      ended: false,
      cancelWhenAlone: opts.cancelWhenAlone === true,
      held: null,
    };
    this.runs.set(entry.runId, entry);
    if (key !== null) this.keyed(kind).set(key, entry);
    slot.runs.add(entry);
    if (opts.subscriber) this.addSubscriber(entry, opts.subscriber);
    const start: ToHost = { t: 'start', runId: entry.runId, kind, request: opts.request };
    if (this.opts.admission === undefined || this.opts.admission.take(entry, opts.owner)) this.sendStart(slot, start);
    else entry.held = [start];
    return { ok: true, handle: this.handle<K, T[K]['value']>(entry, false) };
  }

  /** Would a new run start now? Null: yes; otherwise the refusal (a cluster start asks before taking a lease). */
  admit(owner?: string): StartRefusal | null {
    if (this.opts.admission) return this.opts.admission.admit(this.runs.size, owner);
    if (this.runs.size < this.opts.maxActiveRuns) return null;
    return { ok: false, outcome: 'capacity', message: `server is at capacity (${this.opts.maxActiveRuns} active runs); retry shortly` };
  }

  // The same operations, synchronous and by key, for a cluster registry serving other instances.

  attachNow(kind: string, key: string, subscriber: Subscriber): boolean | 'not_found' {
    const entry = this.keyed(kind).get(key);
    return entry ? this.attachEntry(entry, subscriber) : 'not_found';
  }

  stopNow(kind: string, key: string, message = 'stopped by request'): boolean {
    const entry = this.keyed(kind).get(key);
    if (!entry) return false;
    this.cancel(entry, 'stop', message);
    return true;
  }

  /** The runtime ends one run early (drain, fencing): false when no run is active for the key. */
  cancelNow(kind: string, key: string, why: CancelWhy, message: string): boolean {
    const entry = this.keyed(kind).get(key);
    if (!entry) return false;
    this.cancel(entry, why, message);
    return true;
  }

  /** Asks every active run to end early; returns how many were asked. */
  cancelAll(why: CancelWhy, message: string): number {
    const entries = [...this.runs.values()];
    for (const e of entries) this.cancel(e, why, message);
    return entries.length;
  }

  /** Asks every active run of one user to end early (the user was deleted); returns how many. */
  cancelOwned(owner: string, why: CancelWhy, message: string): number {
    const entries = [...this.runs.values()].filter((e) => e.owner === owner);
    for (const e of entries) this.cancel(e, why, message);
    return entries.length;
  }

  /** Settles when no run is active (at once when none is). */
  whenIdle(): Promise<void> {
    if (this.runs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** The outcome of the key's run here, when it ends; null when none runs here. */
  resultOf(kind: string, key: string): Promise<RunResult> | null {
    return this.keyed(kind).get(key)?.result ?? null;
  }

  /** The keyed runs of this process, synchronously (the cluster registry builds on it). */
  listNow(): RunInfo<KindOf<T>>[] {
    const out: RunInfo<KindOf<T>>[] = [];
    for (const entry of this.runs.values()) if (entry.key !== null) out.push(info<KindOf<T>>(entry));
    return out;
  }

  /** The keyed runs of one kind here, in O(1): a `/metrics` scrape under a flood must not list every run. */
  keyedCount(kind: string): number {
    return this.byKey.get(kind)?.size ?? 0;
  }

  findNow(kind: string, key: string): RunInfo<KindOf<T>> | null {
    const entry = this.keyed(kind).get(key);
    return entry ? info<KindOf<T>>(entry) : null;
  }

  /** Cancels every run, waits for their terminal events (bounded), then stops the hosts. */
  async shutdown(graceMs = 5000): Promise<void> {
    this.closing = true;
    this.cancelAll('shutdown', 'run cancelled: server is shutting down');
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.whenIdle(), new Promise((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    // A run still going after the grace (a loaded host, storage that hangs) still owes its clients a
    // terminal event and an answer; its LlmCall is left to the heartbeat sweeper or the next start.
    this.endRuns([...this.runs.values()], 'run cancelled: server is shutting down (the run did not stop in time)', 'cancelled');
    await Promise.all(this.hosts.map((h) => h.port.terminate()));
  }

  private keyed(kind: string): Map<string, Entry> {
    let map = this.byKey.get(kind);
    if (!map) this.byKey.set(kind, (map = new Map()));
    return map;
  }

  private handle<K extends string, V>(entry: Entry, joined: boolean): RunHandle<K, V> {
    // The host ran the kind's own run function, whose context is typed by the kind's value.
    return { ...info<K>(entry), joined, result: entry.result as Promise<RunResult<V>> };
  }

  private attachEntry(entry: Entry, sub: Subscriber): boolean {
    let closed = false;
    sub.onClose(() => (closed = true));
    if (closed) return false;
    const subId = this.nextSubId++;
    this.pending.set(subId, { entry, sub });
    sub.onClose(() => this.pending.delete(subId));
    this.toHost(entry, { t: 'attach', runId: entry.runId, subId });
    return true;
  }

  private cancel(entry: Entry, why: CancelWhy, message: string): void {
    if (entry.ended) return;
    // A cancel of a start still waiting its turn ends it here: its host never hears of it (no start
    // made, no input stored, no provider called). A user's stop still goes behind its start: a stopped
    // run's answer and record are its kind's (a chat's `done` with `stopped`, its LlmCall `stopped`).
    if (entry.held !== null && why !== 'stop' && this.opts.admission?.withdraw(entry, entry.owner)) {
      entry.held = null;
      this.endRuns([entry], message, 'cancelled');
      return;
    }
    this.toHost(entry, { t: 'cancel', runId: entry.runId, why, message });
  }

  /** A message for a run's host; held behind its start while that waits its turn. */
  private toHost(entry: Entry, msg: ToHost): void {
    if (entry.held === null) entry.host.port.send(msg);
    else entry.held.push(msg);
  }

  private sendStart(slot: HostSlot, start: ToHost): void {
    slot.unheard++;
    slot.port.send(start);
  }

  /** Sends the waiting starts whose turn has come (after a batch's frames went out). */
  private sendWaiting(): void {
    const pacer = this.opts.admission!;
    // Dropped while they waited (adaptive LIFO under a flood that lasts): ended with the refusal, never sent.
    for (let d = pacer.drop(); d !== undefined; d = pacer.drop()) {
      const gone = d.start as Entry;
      gone.held = null;
      if (!gone.ended) this.endRuns([gone], d.refusal.message, d.refusal.outcome);
    }
    for (let next = pacer.next() as Entry | undefined; next !== undefined; next = pacer.next() as Entry | undefined) {
      const held = next.held!;
      next.held = null;
      // Ended while it waited (its host died, a shutdown gave up on it): nothing goes.
      if (next.ended) continue;
      this.sendStart(next.host, held[0]!);
      for (let i = 1; i < held.length; i++) next.host.port.send(held[i]!);
    }
  }

  private spawn(index: number): HostSlot {
    const slot: HostSlot = { index, port: null as unknown as HostPort, runs: new Set(), unheard: 0 };
    slot.port = this.opts.factory(
      index,
      (batch) => {
        const settled = batch.started === undefined ? 0 : Math.min(batch.started, slot.unheard);
        const pacer = this.opts.admission;
        if (pacer === undefined) slot.unheard -= settled;
        this.onBatch(batch);
        if (settled === 0 || pacer === undefined) return;
        // Each at the batch's mean: the host's own measure, without the time this thread took to read it;
        // counted out one by one, so that each sample sees what was in flight beside it.
        const ms = (batch.startedMs ?? 0) / batch.started!;
        for (let i = 0; i < settled; i++) {
          slot.unheard--;
          pacer.settled(ms);
        }
        this.sendWaiting();
      },
      (error) => this.onHostExit(slot, error),
    );
    return slot;
  }

  private addSubscriber(entry: Entry, sub: Subscriber): void {
    entry.subscribers.add(sub);
    sub.onClose(() => {
      entry.subscribers.delete(sub);
      if (sub.dropped) this.stats.slowClientsDropped++;
      if (entry.cancelWhenAlone && entry.subscribers.size === 0) this.cancel(entry, 'disconnect', 'the client disconnected');
    });
  }

  private onBatch(batch: Batch): void {
    const entries = batch.items;
    for (let i = 0; i < entries.length; i++) {
      const item = entries[i]!;
      if (typeof item === 'string') {
        // A run's frames: runId, data, events (protocol.ts, BatchEntry).
        this.onFrames(item, entries[i + 1] as string, entries[i + 2] as number);
        i += 2;
        continue;
      }
      if (typeof item !== 'object') continue;
      switch (item.t) {
        case 'replay': {
          const p = this.pending.get(item.subId);
          if (!p) break;
          this.pending.delete(item.subId);
          p.sub.write(item.data);
          if (item.ended) p.sub.end();
          else this.addSubscriber(p.entry, p.sub);
          break;
        }
        case 'replay_failed': {
          const p = this.pending.get(item.subId);
          this.pending.delete(item.subId);
          if (!p) break;
          p.sub.write(this.errorFrame(p.entry, item.message));
          p.sub.end();
          break;
        }
        case 'gone': {
          const p = this.pending.get(item.subId);
          this.pending.delete(item.subId);
          p?.sub.end();
          break;
        }
        case 'end': {
          const entry = this.runs.get(item.runId);
          if (!entry) break;
          this.finish(entry, item.result);
          entry.host.port.send({ t: 'release', runId: entry.runId });
          break;
        }
        case 'log':
          this.opts.log(item.level, item.message, item.error ?? undefined, item.runId);
          break;
      }
    }
  }

  private onFrames(runId: string, data: string, events: number): void {
    const entry = this.runs.get(runId);
    if (!entry) return;
    for (const sub of entry.subscribers) sub.write(data);
    this.stats.eventsSent += events * entry.subscribers.size;
  }

  private finish(entry: Entry, result: RunResult): void {
    entry.ended = true;
    for (const sub of entry.subscribers) sub.end();
    entry.subscribers.clear();
    entry.host.runs.delete(entry);
    this.runs.delete(entry.runId);
    if (entry.key !== null) {
      const map = this.keyed(entry.kind);
      if (map.get(entry.key) === entry) map.delete(entry.key);
    }
    entry.resolve(result);
    try {
      this.opts.onEnd?.(info(entry), result);
    } catch (err) {
      this.opts.log('error', 'run end hook failed', err);
    }
    if (this.runs.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private onHostExit(slot: HostSlot, error: Error): void {
    this.opts.log('error', `actor host ${slot.index} exited`, error);
    const lost = [...slot.runs];
    try {
      if (lost.length > 0) this.opts.onHostLost?.(lost.map((e) => info(e)));
    } catch (err) {
      this.opts.log('error', 'host lost hook failed', err);
    }
    this.endRuns(lost, `run host failed: ${error.message}`, 'internal');
    // Its unsettled starts will never settle: their places free (the waiting ones ended above go when their turn comes).
    slot.unheard = 0;
    if (this.opts.admission) this.sendWaiting();
    // Attaches to runs that had ended there, sent before the end came back: their replay died with the
    // host. Their streams end as a dropped connection would; a re-attach finds the run over.
    for (const [subId, p] of this.pending) {
      if (p.entry.host !== slot) continue;
      this.pending.delete(subId);
      p.sub.end();
    }
    if (!this.closing) this.hosts[this.hosts.indexOf(slot)] = this.spawn(slot.index);
  }

  private errorFrame(entry: Entry, message: string): string {
    // Only a start cast past the types names a kind without a frame; its end must still go out.
    const frame = this.opts.errorFrames[entry.kind as KindOf<T>] as ((message: string) => string) | undefined;
    return frame ? frame(message) : sseFrame('error', { message });
  }

  /** Ends runs whose host cannot end them: an `error` event to every subscriber, then the result. */
  private endRuns(entries: Entry[], message: string, outcome: RunOutcome): void {
    for (const entry of entries) {
      const frame = this.errorFrame(entry, message);
      for (const sub of entry.subscribers) sub.write(frame);
      for (const [subId, p] of this.pending) {
        if (p.entry !== entry) continue;
        this.pending.delete(subId);
        p.sub.write(frame);
        p.sub.end();
      }
      this.finish(entry, { ok: false, outcome, message });
    }
  }
}

function info<K extends string>(entry: RunInfo): RunInfo<K> {
  const out = { runId: entry.runId, kind: entry.kind as K, key: entry.key, label: entry.label, startedAt: entry.startedAt };
  return entry.owner === undefined ? out : { ...out, owner: entry.owner };
}
