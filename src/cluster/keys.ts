// Every Redis key and channel of cluster mode, under one prefix (REDIS_KEY_PREFIX), so several
// services or test runs can share one Redis without seeing each other.
import type { RunKind } from '../../actors/runs.ts';

/** Every run kind (chat, search, title) is held cluster-wide the same way. */
export type { RunKind };

export interface ClusterKeys {
  /** The lease of one run key: its value is the owning instance's id. */
  lease(kind: RunKind, key: string): string;
  /** The set of `kind:key` runs an instance owns; expires with the instance. */
  runs(instanceId: string): string;
  /** The hash `kind:key` → the user whose run it is, for an instance's runs that have one; expires with the instance. */
  runUsers(instanceId: string): string;
  /** An instance's liveness key. */
  alive(instanceId: string): string;
  /** Every instance id that has announced itself (dead ones are dropped lazily). */
  readonly instances: string;
  /** The pub/sub channel an instance listens on (control messages and frames for its subscribers). */
  inbox(instanceId: string): string;
  /** Every key of this prefix (tests clean up with it). */
  readonly pattern: string;
}

export function clusterKeys(prefix: string): ClusterKeys {
  return {
    lease: (kind, key) => `${prefix}lease:${kind}:${key}`,
    runs: (id) => `${prefix}runs:${id}`,
    runUsers: (id) => `${prefix}runusers:${id}`,
    alive: (id) => `${prefix}alive:${id}`,
    instances: `${prefix}instances`,
    inbox: (id) => `${prefix}inbox:${id}`,
    pattern: `${prefix}*`,
  };
}

/** `chat:<id>`, `search:<id>`, `title:<chatId>`: a run's name in the instance run sets. */
export function runMember(kind: RunKind, key: string): string {
  return `${kind}:${key}`;
}

// Every run kind, checked complete by the compiler: a run set member of another kind is not ours.
const RUN_KINDS: Record<RunKind, true> = { chat: true, search: true, title: true };

/** A run set member back as its kind and key; null for a member this version does not know. */
export function parseRunMember(member: string): { kind: RunKind; key: string } | null {
  const colon = member.indexOf(':');
  const kind = member.slice(0, colon);
  return colon > 0 && Object.hasOwn(RUN_KINDS, kind) ? { kind: kind as RunKind, key: member.slice(colon + 1) } : null;
}
