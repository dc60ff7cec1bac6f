// The owner's side of cluster mode: other instances' subscribers, waiters and stops, served from
// this process's runs through LocalRunPort. A remote subscriber exists only while its client
// listens (RemoteSink); replies go back to the asking instance's inbox.
import type { Logger } from 'pino';
import type { Bus, Message, Reply, Request } from './bus.ts';
import type { LocalRunPort } from './port.ts';
import { RemoteSink } from './remote-sink.ts';

export class RunServer {
  private readonly bus: Bus;
  private readonly local: LocalRunPort;
  private readonly log: Logger;
  private readonly sinks = new Map<string, RemoteSink>();

  constructor(bus: Bus, local: LocalRunPort, log: Logger) {
    this.bus = bus;
    this.local = local;
    this.log = log;
  }

  /** Handles a request from another instance; false when `m` is not one (a reply to this instance). */
  serve(m: Message): m is Request {
    switch (m.t) {
      case 'attach': {
        const sink = new RemoteSink(this.bus, m.from, m.sub);
        const id = `${m.from}/${m.sub}`;
        this.sinks.set(id, sink);
        sink.onClose(() => this.sinks.delete(id));
        if (!this.local.attach(m.kind, m.key, sink)) {
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

  /** The instances this one feeds (checked for liveness at each beat). */
  subscribers(): Set<string> {
    return new Set([...this.sinks.values()].map((s) => s.to));
  }

  /** `peer` is dead: stop feeding its subscribers. */
  peerLost(peer: string): void {
    for (const s of [...this.sinks.values()]) if (s.to === peer) s.close();
  }

  close(): void {
    for (const s of [...this.sinks.values()]) s.close();
  }

  private reply(to: string, m: Reply, payload = ''): void {
    this.bus.send(to, m, payload).catch((err) => this.log.warn({ err, to }, 'cluster reply lost'));
  }
}
