// Messages between instances on Redis pub/sub: each instance listens on its own inbox channel.
// A message is one small JSON header line, then an optional raw payload (SSE frames travel as they
// are, never re-encoded). Redis delivers the messages of one publishing connection to one channel
// in order, which is what makes replay-then-live across instances lose nothing and double nothing.
import type { Redis } from 'ioredis';
import type { ClusterKeys, RunKind } from './keys.ts';
import { asRedisError } from './redis.ts';

/** Requests to the owner of a run. `sub` is the sender's own subscription number. */
export type Request =
  /** `tp`: the attaching request's traceparent (tracing on): the owner's side of the attach is in its trace. */
  | { t: 'attach'; from: string; sub: number; kind: RunKind; key: string; tp?: string }
  | { t: 'wait'; from: string; sub: number; kind: RunKind; key: string }
  | { t: 'detach'; from: string; sub: number }
  /** `cancel`: the run ends with `reason` as its error (its chat was deleted), not as a stopped answer. */
  | { t: 'stop'; from: string; sub: number; kind: RunKind; key: string; reason: string; cancel?: boolean };

/** Replies from the owner to the subscriber's instance. */
export type Reply =
  /** The replay (seq 0), then live frames (seq 1, 2, …) for one subscription. */
  | { t: 'frames'; sub: number; seq: number }
  /** The run's stream ended after frame `seq - 1`. */
  | { t: 'end'; sub: number; seq: number }
  /** No such run here (ended, or never ran here). */
  | { t: 'gone'; sub: number }
  /** The outcome for a non-streaming waiter (payload: the JSON result). */
  | { t: 'result'; sub: number }
  | { t: 'stopped'; sub: number; ok: boolean };

export type Message = Request | Reply;

export function encode(header: Message, payload = ''): string {
  return `${JSON.stringify(header)}\n${payload}`;
}

export function decode(raw: string): { header: Message; payload: string } {
  const nl = raw.indexOf('\n');
  const header = JSON.parse(nl < 0 ? raw : raw.slice(0, nl)) as Message;
  return { header, payload: nl < 0 ? '' : raw.slice(nl + 1) };
}

export class Bus {
  private readonly pub: Redis;
  private readonly sub: Redis;
  private readonly keys: ClusterKeys;
  readonly instanceId: string;

  /** `pub` is a normal connection; `sub` is given over to subscriber mode. */
  constructor(pub: Redis, sub: Redis, keys: ClusterKeys, instanceId: string) {
    this.pub = pub;
    this.sub = sub;
    this.keys = keys;
    this.instanceId = instanceId;
  }

  /** Starts delivering this instance's inbox to `onMessage`. */
  async listen(onMessage: (header: Message, payload: string) => void, onError: (err: unknown) => void): Promise<void> {
    const channel = this.keys.inbox(this.instanceId);
    this.sub.on('message', (ch: string, raw: string) => {
      if (ch !== channel) return;
      try {
        const m = decode(raw);
        onMessage(m.header, m.payload);
      } catch (err) {
        onError(err);
      }
    });
    try {
      await this.sub.subscribe(channel);
    } catch (err) {
      throw asRedisError(err);
    }
  }

  /** Publishes to another instance's inbox. Rejects with RedisUnavailableError when Redis is down. */
  send(to: string, header: Message, payload = ''): Promise<number> {
    return this.pub.publish(this.keys.inbox(to), encode(header, payload)).catch((err: unknown) => {
      throw asRedisError(err);
    });
  }

  /** Called when the subscriber connection drops or comes back (messages in between are lost). */
  onConnection(fn: (up: boolean) => void): void {
    this.sub.on('close', () => fn(false));
    this.sub.on('ready', () => fn(true));
  }
}
