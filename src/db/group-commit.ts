// Group commit: the writes that many runs make within one event-loop turn (their starts, their
// answers) go to the database as one multi-row statement, one round trip and one backend wake-up,
// instead of one each. The ledger (docs/performance.md) puts a persisted start's two statements at
// ~300 µs in the service and ~530–690 µs in Postgres, most of it per round trip, not per row.
//
// No timer: when no group of this kind is in flight on the pool, the first write of a turn schedules
// the flush with setImmediate, which runs after the I/O callbacks of the same loop iteration, so a
// write alone goes out as soon as it would have (as its own single statement). While a group is in
// flight, the writes that arrive collect and go out when it returns (classic group commit): runs
// started a few milliseconds apart share a round trip, and only a busy service waits, by at most
// one statement. A group that reaches GROUP_MAX goes out at once.
//
// A group that stays in flight longer than STALL_MS (a lock held elsewhere, a statement the database
// holds until DATABASE_STATEMENT_TIMEOUT_MS) no longer holds the writes behind it: they go as a group of
// their own. Normal groups answer in milliseconds, so this changes nothing but a stall.
//
// A member's outcome never depends on the others: the multi-row statement answers per member (a
// fencing refusal, a call not found), and when Postgres refuses the statement as a whole (a
// constraint one member broke, a deadlock), which then wrote nothing, every member is retried alone,
// so each gets exactly the result or error its own single statement gives. A connection lost during
// the statement is every member's error, as it would be alone: the group may have committed, and a
// retry could store an answer twice.
import pg from 'pg';
import { ErrorCodes, ServiceError } from '../base/errors.ts';
import type { Queryable } from './types.ts';

/** Thrown by a multi-row write that will not send a group (e.g. two members on one chat): each is written alone. */
export class GroupRefused extends ServiceError {
  constructor(message: string) {
    super(ErrorCodes.GROUP_REFUSED, message);
    this.name = 'GroupRefused';
  }
}

/** True when nothing of the group was written: Postgres refused the statement, or it was never sent. */
const retryAlone = (err: unknown) => err instanceof pg.DatabaseError || err instanceof GroupRefused;

/** The multi-row write: one answer per input, in order, an Error standing for that member's rejection. */
export type ManyWrite<I, O> = (db: Queryable, inputs: readonly I[]) => Promise<Array<O | Error>>;
export type OneWrite<I, O> = (db: Queryable, input: I) => Promise<O>;

interface Member<I, O> {
  input: I;
  resolve: (value: O) => void;
  reject: (error: unknown) => void;
}

/** At most this many members in one statement: bounds its parameter size and the rows it locks. */
export const GROUP_MAX = 64;

/** How long writes wait behind a group in flight before they go without it. */
export const STALL_MS = 2_000;

/**
 * A write that joins the others of the same turn on the same pool. `one` is the single statement
 * (used for a lone member and for the retry of a failed group); `many` the multi-row one, which may
 * throw GroupRefused for a group it cannot write as one (e.g. two members on the same chat) to have each
 * written alone.
 */
export function groupCommit<I, O>(one: OneWrite<I, O>, many: ManyWrite<I, O>, max = GROUP_MAX): OneWrite<I, O> {
  /** Per pool: the members collecting, and how many groups are in flight. */
  const state = new WeakMap<object, { members: Member<I, O>[]; inFlight: number; scheduled: boolean; stall: NodeJS.Timeout | null }>();

  const write = (db: Queryable, members: Member<I, O>[]): Promise<unknown> => {
    if (members.length === 1) {
      const m = members[0]!;
      return one(db, m.input).then(m.resolve, m.reject);
    }
    return many(db, members.map((m) => m.input)).then(
      (results): unknown => results.forEach((r, i) => (r instanceof Error ? members[i]!.reject(r) : members[i]!.resolve(r))),
      (err: unknown): unknown =>
        retryAlone(err) ? Promise.all(members.map((m) => one(db, m.input).then(m.resolve, m.reject))) : members.forEach((m) => m.reject(err)),
    );
  };

  const flush = (db: Queryable): void => {
    const s = state.get(db)!;
    s.scheduled = false;
    if (s.stall !== null) {
      clearTimeout(s.stall);
      s.stall = null;
    }
    if (s.members.length === 0) return;
    const members = s.members;
    s.members = [];
    s.inFlight++;
    void write(db, members).finally(() => {
      s.inFlight--;
      if (s.inFlight === 0 && s.members.length > 0 && !s.scheduled) flush(db);
    });
  };

  return (db, input) =>
    new Promise<O>((resolve, reject) => {
      let s = state.get(db);
      if (!s) state.set(db, (s = { members: [], inFlight: 0, scheduled: false, stall: null }));
      s.members.push({ input, resolve, reject });
      if (s.members.length >= max) flush(db);
      else if (s.inFlight === 0 && !s.scheduled) {
        s.scheduled = true;
        setImmediate(() => flush(db));
      } else if (s.inFlight > 0 && s.stall === null) {
        s.stall = setTimeout(() => flush(db), STALL_MS);
        // A stopping process does not wait for it: the group in flight settles these members' fate.
        s.stall.unref();
      }
    });
}
