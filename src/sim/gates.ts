// Named gates a test opens. A scripted call held at one waits until the test says so, so which of
// two calls answers first, or that a call is still in flight while the test acts, is decided by the
// test, not by a delay that a loaded machine can outrun.
import type { ServerResponse } from 'node:http';
import type { Directive } from './directives.ts';
import { delayUnlessClosed } from './http.ts';

/** Before a provider's status line: the scripted delay, then its gate unless that holds mid-stream. */
export async function beforeStatus(res: ServerResponse, gates: Gates, d: Directive): Promise<boolean> {
  if (!(await delayUnlessClosed(res, d.firstByteDelayMs ?? 0))) return false;
  return gates.pass(res, d.gateAfter === undefined && d.gateEvery === undefined ? d.gate : undefined);
}

export class Gates {
  private readonly opened = new Set<string>();
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Resolves true once `name` is open (at once without a name), false if the client goes away first. */
  pass(res: ServerResponse, name: string | undefined): Promise<boolean> {
    if (name === undefined || this.opened.has(name)) return Promise.resolve(!res.destroyed);
    return new Promise((resolve) => {
      const set = this.waiting.get(name) ?? new Set();
      this.waiting.set(name, set);
      const release = (): void => {
        set.delete(release);
        res.off('close', onClose);
        resolve(!res.destroyed);
      };
      const onClose = (): void => {
        set.delete(release);
        resolve(false);
      };
      set.add(release);
      res.once('close', onClose);
    });
  }

  /** Lets every call held at `name` go on, and every later one pass it. */
  open(name: string): void {
    this.opened.add(name);
    for (const release of [...(this.waiting.get(name) ?? [])]) release();
    this.waiting.delete(name);
  }

  /** How many calls wait at `name` now: a test waits for this before it acts on "the call is held". */
  held(name: string): number {
    return this.waiting.get(name)?.size ?? 0;
  }
}
