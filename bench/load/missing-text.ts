// The kill check's judgement of one stream (kill-recovery.ts): what its client had received when the
// instance died, against the interrupted answer recovered after the restart. Both are stamped texts
// (`<epoch ms>|` per delta, the simulator's send time), so the missing part is read in stream time:
// the last stamp the client had, less the last stamp recovered.
import { eachStamp } from './client.ts';

export interface Judged {
  /** An interrupted answer was stored for the chat. */
  recovered: boolean;
  /** The two texts agree: one is a prefix of the other (both are prefixes of the same answer). */
  consistent: boolean;
  /** Stream time of the text the client had and the recovered answer lacks (0 when it lacks none); null when the client had nothing. */
  missingMs: number | null;
}

const lastStamp = (text: string): number | null => {
  let last: number | null = null;
  eachStamp(text, (s) => void (last = s));
  return last;
};

const firstStamp = (text: string): number | null => {
  let first: number | null = null;
  eachStamp(text, (s) => void (first ??= s));
  return first;
};

/** `recovered` null: no interrupted answer was stored. */
export function judgeRecovered(received: string, recovered: string | null): Judged {
  const had = lastStamp(received);
  if (recovered === null) return { recovered: false, consistent: false, missingMs: had === null ? null : had - firstStamp(received)! };
  const consistent = received.startsWith(recovered) || recovered.startsWith(received);
  if (had === null) return { recovered: true, consistent, missingMs: null };
  // Nothing checkpointed yet: everything received is missing, from its first delta on.
  const kept = lastStamp(recovered) ?? firstStamp(received)!;
  return { recovered: true, consistent, missingMs: Math.max(0, Number((had - kept).toFixed(3))) };
}
