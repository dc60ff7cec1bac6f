// The supervisor, on the main thread: the in-process core of the run registry (src/service/runs.ts adds the
// cluster). It keeps the one-run-per-key rule for every kind, places runs on actor hosts, and fans
// each run's pre-encoded frames out to its subscribers. Starting is synchronous, so two starts for one
// key can never both pass. A host that dies takes only its own runs down; they end with an `error` event.
import { randomUUID } from 'node:crypto';
import { sseFrame } from './frame.ts';
import type { Batch, CancelWhy, KindOf, RunOutcome, RunResult, RunTypeMap } from './protocol.ts';
import type { RunHandle, RunInfo, Started, StartOptions, StartRefusal } from './registry.ts';
import { PacedStarts, type PacedRun } from './start-pacing.ts';
import type { Subscriber } from './subscriber.ts';
import type { HostPort, SupervisorOptions, SupervisorStats } from './supervisor-options.ts';

export type { StartPacer } from './start-pacing.ts';
export type { HostFactory, HostPort, SupervisorOptions, SupervisorStats } from './supervisor-options.ts';

interface HostSlot {
  index: number;
  port: HostPort;
  runs: Set<Entry>;
  /** Starts sent to this host that it has not yet said it took up (Batch.started). */
  unheard: number;
}

interface Entry extends RunInfo, PacedRun {
  readonly subscribers: Set<Subscriber>;
  readonly result: Promise<RunResult>;
  resolve(result: RunResult): void;
  host: HostSlot;
  ended: boolean;
  cancelWhenAlone: boolean;
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
  private readonly starts: PacedStarts<Entry>;
  /** Each host's batches, after the pacing counted out their settled starts (one closure, not one a batch). */
  private readonly handleBatch = (batch: Batch): void => this.onBatch(batch);

  constructor(opts: SupervisorOptions<T>) {
    this.opts = opts;
    this.clock = opts.clock ?? Date;
    this.newId = opts.newId ?? randomUUID;
    this.starts = new PacedStarts<Entry>(opts.admission, (entry, message, outcome) => this.endRuns([entry], message, outcome));
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
    this.starts.start(entry, { t: 'start', runId: entry.runId, kind, request: opts.request });
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
    this.starts.send(entry, { t: 'attach', runId: entry.runId, subId });
    return true;
  }

  private cancel(entry: Entry, why: CancelWhy, message: string): void {
    if (entry.ended) return;
    // A cancel of a start still waiting its turn ends it here: its host never hears of it (no start
    // made, no input stored, no provider called). A user's stop still goes behind its start: a stopped
    // run's answer and record are its kind's (a chat's `done` with `stopped`, its LlmCall `stopped`).
    if (why !== 'stop' && this.starts.withdraw(entry)) {
      this.endRuns([entry], message, 'cancelled');
      return;
    }
    this.starts.send(entry, { t: 'cancel', runId: entry.runId, why, message });
  }

  private spawn(index: number): HostSlot {
    const slot: HostSlot = { index, port: null as unknown as HostPort, runs: new Set(), unheard: 0 };
    slot.port = this.opts.factory(
      index,
      (batch) => this.starts.onBatch(slot, batch, this.handleBatch),
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
    this.starts.hostLost(slot);
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
