// A mailbox: messages are handled one at a time, in arrival order. Handlers are synchronous, so
// one message never waits on another; long work (the provider/tool loop) is started by a message
// and reports back through the actor's synchronous emit, which runs on the same thread between
// messages. Ordering between live events and an attach's replay is therefore the mailbox's.
export class Mailbox<M> {
  private readonly queue: M[] = [];
  private draining = false;
  private readonly handle: (msg: M) => void;
  private readonly onError: (err: unknown, msg: M) => void;

  constructor(handle: (msg: M) => void, onError: (err: unknown, msg: M) => void) {
    this.handle = handle;
    this.onError = onError;
  }

  post(msg: M): void {
    this.queue.push(msg);
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const next = this.queue.shift()!;
        try {
          this.handle(next);
        } catch (err) {
          this.onError(err, next);
        }
      }
    } finally {
      this.draining = false;
    }
  }
}
