// The owner's side of cluster mode: other instances' subscribers, waiters and stops, served from
// this process's runs through LocalRunPort. A remote subscriber exists only while its client
// listens (RemoteSink); replies go back to the asking instance's inbox. A reply that Redis could not
// take (this instance's connection was down a moment) is kept and sent again at each beat until it
// goes or its instance is lost: a remote waiter has no deadline, so a lost result would leave it
// waiting for as long as both instances live.
import type { Logger } from 'pino';
import type { Bus, Message, Reply, Request } from './bus.ts';
import type { LocalRunPort } from './port.ts';
import { RemoteSink } from './remote-sink.ts';
import { SpanKind } from '@opentelemetry/api';
import { startSpan, withSpan } from '../telemetry/tracing.ts';

export class RunServer {
  private readonly bus: Bus;
  private readonly local: LocalRunPort;
  private readonly log: Logger;
  private readonly sinks = new Map<string, RemoteSink>();
  private unsent: Array<{ to: string; m: Reply; payload: string }> = [];

  constructor(bus: Bus, local: LocalRunPort, log: Logger) {
    this.bus = bus;
    this.local = local;
    this.log = log;
  }

  /** Handles a request from another instance; false when `m` is not one (a reply to this instance). */
  serve(m: Message): m is Request {
    switch (m.t) {
      case 'attach': {
        const sink = new RemoteSink(this.bus, m.from, m.sub, this.keep);
        const id = `${m.from}/${m.sub}`;
        this.sinks.set(id, sink);
        sink.onClose(() => this.sinks.delete(id));
        // Tracing: the owner's side of the attach, a child of the attaching request, linked to the run.
        const span = m.tp === undefined ? null : startSpan('attach', { kind: SpanKind.SERVER, parent: m.tp, attributes: { 'run.key': `${m.kind}:${m.key}`, 'attach.from': m.from } });
        const attached = withSpan(span, () => this.local.attach(m.kind, m.key, sink));
        span?.end();
        if (!attached) {
          sink.close();
          this.reply(m.from, { t: 'gone', sub: m.sub });
        }
        return true;
      }
      case 'detach':
        this.sinks.get(`${m.from}/${m.sub}`)?.close();
        return true;
      case 'wait': {
        const outcome = this.local.outcome(m.kind, m.key);
        if (!outcome) this.reply(m.from, { t: 'gone', sub: m.sub });
        else void outcome.then((r) => this.reply(m.from, { t: 'result', sub: m.sub }, JSON.stringify(r)));
        return true;
      }
      case 'stop':
        this.reply(m.from, { t: 'stopped', sub: m.sub, ok: this.local.stop(m.kind, m.key, m.reason, m.cancel === true) });
        return true;
      default:
        return false;
    }
  }

  /** The instances this one feeds or owes a reply (checked for liveness at each beat). */
  subscribers(): Set<string> {
    const out = new Set([...this.sinks.values()].map((s) => s.to));
    for (const u of this.unsent) out.add(u.to);
    return out;
  }

  /** `peer` is dead: stop feeding its subscribers, and drop what was kept for it. */
  peerLost(peer: string): void {
    for (const s of [...this.sinks.values()]) if (s.to === peer) s.close();
    this.unsent = this.unsent.filter((u) => u.to !== peer);
  }

  /** Sends again the replies Redis could not take (called at each beat, once Redis answered it). */
  async resend(): Promise<void> {
    const kept = this.unsent;
    this.unsent = [];
    for (const u of kept) {
      // In order, so a second failure keeps the rest in theirs.
      await this.bus.send(u.to, u.m, u.payload).catch(() => this.unsent.push(u));
    }
  }

  close(): void {
    for (const s of [...this.sinks.values()]) s.close();
    this.unsent = [];
  }

  private reply(to: string, m: Reply, payload = ''): void {
    this.bus.send(to, m, payload).catch((err) => {
      this.log.warn({ err, to }, 'cluster reply not sent; it is sent again at the next beat');
      this.keep(to, m, payload);
    });
  }

  private keep = (to: string, m: Reply, payload = ''): void => {
    this.unsent.push({ to, m, payload });
  };
}
