// At most `limit` SSH handshakes at once per host: a stock sshd (MaxStartups 10:30:100) drops new
// unauthenticated connections at random past 10, so a round of many parallel remote tool calls would
// see some fail as "connection reset" for no fault of their own. Only the handshake is bounded: a
// command, once authenticated, runs for as long as it needs without holding a turn. Per thread (each
// actor thread has its own), so the configured bound is shared out among the actor threads.

interface Waiter {
  go: () => void;
}

class Gate {
  limit = 1;
  private active = 0;
  private readonly waiting: Waiter[] = [];

  /** Resolves with the turn's release once a turn is free; rejects with `signal`'s reason if it aborts first. */
  take(signal: AbortSignal): Promise<() => void> {
    return new Promise((resolve, reject) => {
      const grant = () => {
        this.active++;
        let released = false;
        resolve(() => {
          if (released) return;
          released = true;
          this.active--;
          this.next();
        });
      };
      if (this.active < this.limit) return grant();
      const waiter: Waiter = {
        go: () => {
          signal.removeEventListener('abort', onAbort);
          grant();
        },
      };
      const onAbort = () => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(signal.reason);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }

  private next(): void {
    while (this.active < this.limit && this.waiting.length > 0) this.waiting.shift()!.go();
  }
}

const gates = new Map<string, Gate>();

/** A turn to handshake with `host:port`, at most `limit` at once in this thread; the caller releases it. */
export function handshakeTurn(host: string, port: number, limit: number, signal: AbortSignal): Promise<() => void> {
  const key = `${host}:${port}`;
  let gate = gates.get(key);
  if (!gate) gates.set(key, (gate = new Gate()));
  gate.limit = limit;
  return gate.take(signal);
}

/** Each actor thread's share of the process's bound on handshakes (at least one). */
export function handshakesPerThread(maxHandshakes: number, actorThreads: number): number {
  return Math.max(1, Math.floor(maxHandshakes / Math.max(1, actorThreads)));
}
