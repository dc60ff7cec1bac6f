// Who is calling: every request's bearer token resolved once, before its handler, into the user whose
// workspace it acts in. Stores take `userId` as the owner of what they read and write.

import { ADMIN_USER_ID } from '../base/types.ts';

export interface Caller {
  userId: string;
  /** The operator (ADMIN_TOKEN, or open mode): may manage users and read /metrics; has no limits. */
  admin: boolean;
  /** The user's own limits as stored (null: the service-wide default); the admin's are never applied. */
  maxActiveRuns: number | null;
  tokensPerDay: number | null;
  /** USD per UTC day (null: USER_COST_PER_DAY). */
  costPerDay: number | null;
}

export const ADMIN_CALLER: Caller = Object.freeze({ userId: ADMIN_USER_ID, admin: true, maxActiveRuns: null, tokensPerDay: null, costPerDay: null });

/** What a public route (health, readiness, the web client) runs as: an owner of nothing. */
export const PUBLIC_CALLER: Caller = Object.freeze({ userId: '', admin: false, maxActiveRuns: null, tokensPerDay: null, costPerDay: null });
