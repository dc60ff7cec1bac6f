// Group commit: the writes that many runs make within one event-loop turn (their starts, their
// answers) go to the database as one multi-row statement, one round trip and one backend wake-up,
// instead of one each. The ledger (docs/performance.md) puts a persisted start's two statements at
// ~300 µs in the service and ~530–690 µs in Postgres, most of it per round trip, not per row.
//
// No timer: the first write of a turn schedules the flush with setImmediate, which runs after the
// I/O callbacks of the same loop iteration, so a write alone goes out as soon as it would have
// (and as its own single statement), and only writes that arrive together wait for each other.
//
// A member's outcome never depends on the others: the multi-row statement answers per member (a
// fencing refusal, a call not found), and when the statement as a whole fails (a constraint one
// member broke, a deadlock, a lost connection) every member is retried alone, so each gets exactly
// the result or error its own single statement gives.
import type { Queryable } from './types.ts';

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

/**
 * A write that joins the others of the same turn on the same pool. `one` is the single statement
 * (used for a lone member and for the retry of a failed group); `many` the multi-row one, which may
 * reject a group it cannot write as one (e.g. two members on the same chat) to have each written alone.
 */
export function groupCommit<I, O>(one: OneWrite<I, O>, many: ManyWrite<I, O>, max = GROUP_MAX): OneWrite<I, O> {
  const pending = new WeakMap<object, Member<I, O>[]>();

  const flush = (db: Queryable, members: Member<I, O>[]): void => {
    if (pending.get(db) === members) pending.delete(db);
    if (members.length === 1) {
      const m = members[0]!;
      one(db, m.input).then(m.resolve, m.reject);
      return;
    }
    many(db, members.map((m) => m.input)).then(
      (results) => {
        results.forEach((r, i) => (r instanceof Error ? members[i]!.reject(r) : members[i]!.resolve(r)));
      },
      () => {
        for (const m of members) one(db, m.input).then(m.resolve, m.reject);
      },
    );
  };

  return (db, input) =>
    new Promise<O>((resolve, reject) => {
      let members = pending.get(db);
      if (!members) {
        const fresh: Member<I, O>[] = [];
        members = fresh;
        pending.set(db, fresh);
        setImmediate(() => {
          if (pending.get(db) === fresh) flush(db, fresh);
        });
      }
      members.push({ input, resolve, reject });
      if (members.length >= max) flush(db, members);
    });
}
