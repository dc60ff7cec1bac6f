// The supervisor, on the main thread: the registry of active runs (one persisted run per chat, one
// run per search), placement of runs on actor hosts, and fan-out of each run's pre-encoded frames
// to its SSE subscribers. Registration is synchronous, so two simultaneous starts for one chat can
// never both pass. A host that dies takes only its own runs down; they end with an `error` event.
import { randomUUID } from 'node:crypto';
import { HttpError } from '../src/http/errors.ts';
import type { SseSink } from '../src/http/sse.ts';
import { sseFrame } from './frame.ts';
import type { Batch, RunKind, RunResult, ToHost } from './protocol.ts';

export interface HostPort {
  send(msg: ToHost): void;
  terminate(): Promise<void>;
  /** Settles when the host can run actors (a worker has loaded its code and resources). */
  ready: Promise<void>;
}

/** Makes host number `index`; it reports batches and its own death through the callbacks. */
export type HostFactory = (index: number, onBatch: (batch: Batch) => void, onExit: (error: Error) => void) => HostPort;

export interface RunEntry {
  readonly runId: string;
  readonly kind: RunKind;
  /** chatId or searchId when the run holds one; null for unpersisted runs. */
  readonly key: string | null;
  readonly subscribers: Set<SseSink>;
  readonly result: Promise<RunResult>;
  host: HostSlot | null;
  ended: boolean;
  /** A label for metrics (the provider, or the engine). */
  label: string;
  /** Cancel the run when its last subscriber leaves (nobody can ever attach to it again). */
  cancelWhenAlone: boolean;
  startedAt: number;
}

interface HostSlot {
  index: number;
  port: HostPort;
  runs: Set<RunEntryImpl>;
}

interface RunEntryImpl extends RunEntry {
  resolve(result: RunResult): void;
}

export interface SupervisorStats {
  runsStarted: number;
  eventsSent: number;
  slowClientsDropped: number;
}

export class Supervisor {
  private readonly byChat = new Map<string, RunEntryImpl>();
  private readonly bySearch = new Map<string, RunEntryImpl>();
  private readonly runs = new Map<string, RunEntryImpl>();
  private readonly pending = new Map<number, { entry: RunEntryImpl; sink: SseSink }>();
  private readonly hosts: HostSlot[] = [];
  private readonly factory: HostFactory;
  private readonly maxActiveRuns: number;
  private nextSubId = 1;
  private closing = false;
  readonly stats: SupervisorStats = { runsStarted: 0, eventsSent: 0, slowClientsDropped: 0 };

  private readonly onEnd: ((entry: RunEntry, result: RunResult) => void) | undefined;

  constructor(opts: { hosts: number; factory: HostFactory; maxActiveRuns: number; onEnd?: (entry: RunEntry, result: RunResult) => void }) {
    this.factory = opts.factory;
    this.onEnd = opts.onEnd;
    this.maxActiveRuns = opts.maxActiveRuns;
    for (let i = 0; i < Math.max(1, opts.hosts); i++) this.hosts.push(this.spawn(i));
  }

  /** Every host is ready: until then the first runs would wait for a worker's boot. */
  ready(): Promise<void> {
    return Promise.all(this.hosts.map((h) => h.port.ready)).then(() => undefined);
  }

  get activeCount(): number {
    return this.runs.size;
  }

  activeRuns(): { chats: string[]; searches: string[] } {
    return { chats: [...this.byChat.keys()], searches: [...this.bySearch.keys()] };
  }

  find(kind: RunKind, key: string): RunEntry | undefined {
    return (kind === 'chat' ? this.byChat : this.bySearch).get(key);
  }

  /**
   * Registers a run synchronously, before the caller's first await. Throws 409 when the chat or
   * search already has a run and 503 when the process is at capacity.
   */
  reserve(kind: RunKind, key: string | null): RunEntry {
    if (this.closing) throw new HttpError(503, 'server is shutting down', { 'retry-after': '5' });
    const registry = kind === 'chat' ? this.byChat : this.bySearch;
    if (key !== null && registry.has(key)) {
      throw new HttpError(409, kind === 'chat' ? 'an active chat stream already exists for this chat' : 'an active search run already exists for this search');
    }
    if (this.runs.size >= this.maxActiveRuns) {
      throw new HttpError(503, `server is at capacity (${this.maxActiveRuns} active runs); retry shortly`, { 'retry-after': '1' });
    }
    let resolve!: (r: RunResult) => void;
    const result = new Promise<RunResult>((r) => (resolve = r));
    const entry: RunEntryImpl = { runId: randomUUID(), kind, key, subscribers: new Set(), result, resolve, host: null, ended: false, label: '', startedAt: 0, cancelWhenAlone: false };
    this.runs.set(entry.runId, entry);
    if (key !== null) registry.set(key, entry);
    return entry;
  }

  /** Drops a reservation that will not run (e.g. its chat turned out not to exist). */
  abandon(entry: RunEntry): void {
    if (entry.host) return;
    this.forget(entry as RunEntryImpl);
  }

  /** Places the run on the least loaded host. `first` receives every frame from the start. */
  launch(entry: RunEntry, request: unknown, first?: SseSink, label = '', opts: { cancelWhenAlone?: boolean } = {}): void {
    const impl = entry as RunEntryImpl;
    impl.label = label;
    impl.cancelWhenAlone = opts.cancelWhenAlone === true;
    impl.startedAt = performance.now();
    let slot = this.hosts[0]!;
    for (const h of this.hosts) if (h.runs.size < slot.runs.size) slot = h;
    impl.host = slot;
    slot.runs.add(impl);
    if (first) this.addSubscriber(impl, first);
    this.stats.runsStarted++;
    slot.port.send({ t: 'start', runId: impl.runId, kind: impl.kind, request });
  }

  /** Replays the run's buffer to `sink`, then follows it live until its terminal event. */
  attach(entry: RunEntry, sink: SseSink): void {
    const impl = entry as RunEntryImpl;
    if (!impl.host) throw new Error('attach before launch');
    const subId = this.nextSubId++;
    this.pending.set(subId, { entry: impl, sink });
    sink.onClose(() => this.pending.delete(subId));
    impl.host.port.send({ t: 'attach', runId: impl.runId, subId });
  }

  cancel(entry: RunEntry, reason: string): void {
    const impl = entry as RunEntryImpl;
    impl.host?.port.send({ t: 'cancel', runId: impl.runId, reason });
  }

  /** Cancels every run, waits for their terminal events (bounded), then stops the hosts. */
  async shutdown(graceMs = 5000): Promise<void> {
    this.closing = true;
    const results = [...this.runs.values()].map((e) => {
      this.cancel(e, 'server is shutting down');
      return e.result;
    });
    await Promise.race([Promise.all(results), new Promise((r) => setTimeout(r, graceMs).unref())]);
    await Promise.all(this.hosts.map((h) => h.port.terminate()));
  }

  private spawn(index: number): HostSlot {
    const slot: HostSlot = { index, port: null as unknown as HostPort, runs: new Set() };
    slot.port = this.factory(
      index,
      (batch) => this.onBatch(batch),
      (error) => this.onHostExit(slot, error),
    );
    return slot;
  }

  private addSubscriber(entry: RunEntryImpl, sink: SseSink): void {
    entry.subscribers.add(sink);
    sink.onClose(() => {
      entry.subscribers.delete(sink);
      if (sink.dropped) this.stats.slowClientsDropped++;
      if (entry.cancelWhenAlone && entry.subscribers.size === 0 && !entry.ended) this.cancel(entry, 'the client disconnected');
    });
  }

  private onBatch(batch: Batch): void {
    for (const item of batch.items) {
      switch (item.t) {
        case 'frames': {
          const entry = this.runs.get(item.runId);
          if (!entry) break;
          for (const sink of entry.subscribers) sink.write(item.data);
          this.stats.eventsSent += item.events * entry.subscribers.size;
          break;
        }
        case 'replay': {
          const p = this.pending.get(item.subId);
          if (!p) break;
          this.pending.delete(item.subId);
          p.sink.write(item.data);
          if (item.ended) p.sink.end();
          else this.addSubscriber(p.entry, p.sink);
          break;
        }
        case 'gone': {
          const p = this.pending.get(item.subId);
          this.pending.delete(item.subId);
          p?.sink.end();
          break;
        }
        case 'end': {
          const entry = this.runs.get(item.runId);
          if (!entry) break;
          this.finish(entry, item.result);
          entry.host?.port.send({ t: 'release', runId: entry.runId });
          break;
        }
      }
    }
  }

  private finish(entry: RunEntryImpl, result: RunResult): void {
    entry.ended = true;
    for (const sink of entry.subscribers) sink.end();
    entry.subscribers.clear();
    entry.host?.runs.delete(entry);
    this.forget(entry);
    entry.resolve(result);
    this.onEnd?.(entry, result);
  }

  private forget(entry: RunEntryImpl): void {
    this.runs.delete(entry.runId);
    if (entry.key !== null) {
      const registry = entry.kind === 'chat' ? this.byChat : this.bySearch;
      if (registry.get(entry.key) === entry) registry.delete(entry.key);
    }
  }

  private onHostExit(slot: HostSlot, error: Error): void {
    const message = `run host failed: ${error.message}`;
    const frame = sseFrame('error', { type: 'error', message });
    for (const entry of [...slot.runs]) {
      for (const sink of entry.subscribers) sink.write(frame);
      for (const [subId, p] of this.pending) {
        if (p.entry !== entry) continue;
        this.pending.delete(subId);
        p.sink.write(frame);
        p.sink.end();
      }
      this.finish(entry, { ok: false, status: 500, message });
    }
    if (!this.closing) {
      const fresh = this.spawn(slot.index);
      this.hosts[this.hosts.indexOf(slot)] = fresh;
    }
  }
}
