// The whole configuration contract, read once from the environment and validated with zod.
// A bad value stops the start with a message naming the variable (see ConfigError).
import os from 'node:os';
import { z } from 'zod';
import { ErrorCodes, ServiceError } from './errors.ts';
import { PriceTableError, readPriceTable, type PriceTable } from '../cost/prices.ts';
import { PROVIDERS, type ProviderName } from './types.ts';

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes' || v === 'on');

/** A whole number in [min, max]; any bad value (`-1`, `0` below min, `1.5`, `ten`) gets the same one message. */
const int = (min: number, max = Number.MAX_SAFE_INTEGER) => {
  const message = max === Number.MAX_SAFE_INTEGER ? `must be a whole number of at least ${min}` : `must be a whole number from ${min} to ${max}`;
  return z.string().transform((v, ctx) => {
    const n = /^\d+$/.test(v) ? Number(v) : NaN;
    if (n >= min && n <= max) return n;
    ctx.addIssue({ code: 'custom', message: `${message} (got ${v})` });
    return z.NEVER;
  });
};

/**
 * A duration that feeds setTimeout or setInterval: Node runs any delay past 2^31 - 1 ms (24.8 days)
 * after 1 ms instead, so a value meant as "never" would time out or beat at once.
 */
const ms = (min: number) => int(min, 2 ** 31 - 1);

const url = z.string().url('must be a URL');

/** The fixed thresholds the adaptive admission replaced (src/admission/): still accepted, with a warning at start. */
const RETIRED_OVERLOAD_VARIABLES = ['OVERLOAD_LAG_MS', 'OVERLOAD_START_BACKLOG', 'OVERLOAD_BUSY_PERCENT'] as const;

/** The warning for retired variables still set, or null when none is. */
export function retiredVariablesWarning(c: Partial<Record<(typeof RETIRED_OVERLOAD_VARIABLES)[number], string>>): string | null {
  const set = RETIRED_OVERLOAD_VARIABLES.filter((name) => c[name] !== undefined);
  if (set.length === 0) return null;
  return `${set.join(', ')} ${set.length === 1 ? 'is' : 'are'} no longer used and ignored: admission adapts on its own (ADMISSION=off turns shedding off)`;
}

/** `item` when it is an origin (`scheme://host[:port]`, no path; a trailing slash is dropped); else null. */
function asOrigin(item: string): string | null {
  try {
    const origin = new URL(item).origin;
    return origin === item.replace(/\/$/, '') ? origin : null;
  } catch {
    return null;
  }
}

const commaList = (v: string) => v.split(',').map((s) => s.trim()).filter((s) => s !== '');

/** `*`, or comma-separated origins as a browser sends them (`scheme://host[:port]`, no path). */
const corsOrigins = z
  .string()
  .transform((v, ctx): '*' | string[] => {
    const items = commaList(v);
    if (items.length === 1 && items[0] === '*') return '*';
    if (items.length === 0) items.push('');
    for (const item of items) {
      if (asOrigin(item) === null) {
        ctx.addIssue({ code: 'custom', message: `must be * or comma-separated origins such as https://app.example.com (got ${item})` });
        return z.NEVER;
      }
    }
    return items.map((s) => s.replace(/\/$/, ''));
  });

/** Comma-separated `http://host:port` origins that speak HTTP/2 with prior knowledge (h2c). */
const h2cOrigins = z.string().transform((v, ctx): string[] => {
  const items = commaList(v);
  const origins = items.map(asOrigin);
  const bad = items.find((item, i) => origins[i] === null || !item.startsWith('http:'));
  if (bad !== undefined) {
    ctx.addIssue({ code: 'custom', message: `must be comma-separated http origins such as http://127.0.0.1:8000 (got ${bad})` });
    return z.NEVER;
  }
  return origins as string[];
});
/** A model to go on with: the next link of a fallback chain. */
export interface FallbackTarget {
  provider: ProviderName;
  model: string;
}

/** `provider_a=provider_c/sim-c-large;provider_c=provider_b/sim-b-large`: each provider's next model when it fails. */
const fallbacks = z.string().transform((v, ctx): Partial<Record<ProviderName, FallbackTarget>> => {
  const out: Partial<Record<ProviderName, FallbackTarget>> = {};
  for (const item of v.split(';').map((x) => x.trim()).filter((x) => x !== '')) {
    const m = /^(\w+)\s*=\s*(\w+)\/(\S+)$/.exec(item);
    const from = m?.[1] as ProviderName | undefined;
    const to = m?.[2] as ProviderName | undefined;
    if (!m || !PROVIDERS.includes(from!) || !PROVIDERS.includes(to!) || from === to || out[from!]) {
      ctx.addIssue({ code: 'custom', message: `must be provider=provider/model pairs joined by ';', each provider once, e.g. provider_a=provider_c/sim-c-large;provider_c=provider_b/sim-b-large (got ${item})` });
      return z.NEVER;
    }
    out[from!] = { provider: to!, model: m[3]! };
  }
  return out;
});

const optionalText = z.string().optional().transform((v) => (v && v.trim() ? v.trim() : undefined));

const schema = z.object({
  NODE_ENV: z.string().default('development'),
  PORT: int(0, 65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: optionalText,
  /** Named statements for the run path (src/db/prepared.ts); false behind a pooler that cannot keep them. */
  DATABASE_PREPARED_STATEMENTS: bool.default(true),
  /**
   * Postgres (DATABASE_URL) cancels a statement running longer than this, and a connection that then
   * stays silent for DATABASE_SILENT_GRACE_MS more is dropped: a run or request fails as the database
   * unavailable instead of hanging on a lock or a lost connection. 0: no limit.
   */
  DATABASE_STATEMENT_TIMEOUT_MS: int(0, 3_600_000).default(30_000),
  DATA_DIR: z.string().min(1).default('./data'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ADMIN_TOKEN: optionalText,
  ACTOR_THREADS: int(0, 256).optional(),
  SIMULATE: z.enum(['auto', 'off', 'all']).default('auto'),
  /** Runs allowed at once on this process; past it new runs get 503 (load shedding). */
  MAX_ACTIVE_RUNS: int(1).default(20000),
  /** Runs one user may have going at once, cluster-wide, unless the user has their own maxActiveRuns. */
  USER_MAX_ACTIVE_RUNS: int(1).default(20),
  /** Tokens one user's LlmCalls may use per UTC day, unless the user has their own tokensPerDay; unset: no budget. */
  USER_TOKENS_PER_DAY: int(1).optional(),
  /** USD one user's LlmCalls may cost per UTC day (priced by MODEL_PRICES), unless the user has their own costPerDay; unset: no budget. */
  USER_COST_PER_DAY: z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a positive number of USD')
    .transform(Number)
    .refine((n) => n > 0, 'must be a positive number of USD')
    .optional(),
  /** A JSON price table in LiteLLM's keys (src/cost/prices.ts); unset: the simulator's models, free. */
  MODEL_PRICES: optionalText,
  /** Names this process's LlmCalls and heartbeat row; unique per live process. */
  INSTANCE_ID: z.string().min(1).optional(),
  /** Interval of this instance's heartbeat in the database; silent for 3 intervals = stopped. */
  INSTANCE_HEARTBEAT_MS: ms(50).default(3000),
  /** Cluster mode: instances sharing this Redis (and one Postgres) act as one service. Unset: one process. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')
    .optional(),
  /** Prefix of every cluster key and channel in Redis (several services can share one Redis). */
  REDIS_KEY_PREFIX: z.string().min(1).default('convsearch:'),
  /** Expiry of run leases and instance liveness in Redis, renewed every sixth of it (src/cluster/timing.ts): a killed instance's runs are free after at most this long. */
  CLUSTER_LEASE_TTL_MS: int(300, 60_000).default(10_000),
  /** Interval of the `: ping` comment on open SSE streams. */
  SSE_HEARTBEAT_MS: ms(100).default(15_000),
  /** On SIGTERM/SIGINT, how long running runs may go on to their natural end (drain); 0 cuts them at once. */
  SHUTDOWN_GRACE_MS: int(0, 3_600_000).default(30_000),
  /**
   * `adaptive`: starts beyond what the instance keeps up with wait their turn, and a flood that lasts is
   * refused (503 overloaded); `off`: no start waits and none is refused for overload (see README).
   */
  ADMISSION: z.enum(['adaptive', 'off']).default('adaptive'),
  /** Retired (RETIRED_OVERLOAD_VARIABLES): any value is accepted and ignored, with a warning. */
  OVERLOAD_LAG_MS: z.string().optional(),
  OVERLOAD_START_BACKLOG: z.string().optional(),
  OVERLOAD_BUSY_PERCENT: z.string().optional(),
  /** Bytes queued for one slow SSE client before it is dropped. */
  SSE_MAX_QUEUED_BYTES: int(1024).default(1024 * 1024),
  /** How often the text each persisted chat run has streamed reaches the database (recovery after a crash); 0 turns it off. */
  CHECKPOINT_MS: int(0, 3_600_000).default(1000),
  /** Cluster mode: a live peer continues a lost instance's provider_b runs from their checkpoint; unset: on with REDIS_URL. */
  RUN_TAKEOVER: bool.optional(),
  /** Origins whose web pages may call the API (CORS); unset sends no CORS headers at all. */
  CORS_ORIGINS: corsOrigins.optional(),
  /** Single sign-on: the identity provider's JWKS; JWT bearer tokens signed by one of its keys are users (src/auth/jwt.ts). */
  AUTH_JWKS_URL: z
    .string()
    .regex(/^https?:\/\/\S+$/, 'must be an http:// or https:// URL')
    .pipe(url)
    .optional(),
  /** A JWT's `iss` must equal it (checked when set). */
  AUTH_ISSUER: optionalText,
  /** A JWT's `aud` must contain it (checked when set). */
  AUTH_AUDIENCE: optionalText,

  PROVIDER_A_API_KEY: optionalText,
  PROVIDER_A_BASE_URL: url.optional(),
  PROVIDER_B_API_KEY: optionalText,
  PROVIDER_B_BASE_URL: url.optional(),
  PROVIDER_C_API_KEY: optionalText,
  PROVIDER_C_BASE_URL: url.optional(),
  AGENT_PROVIDER_API_KEY: optionalText,
  AGENT_PROVIDER_API_BASE_URL: url.default('http://127.0.0.1:8642/v1'),
  AGENT_PROVIDER_MODEL: optionalText,
  TITLE_MODEL: z.string().min(1).default('gpt-4.1-nano'),
  /**
   * Per-attempt timeout handed to the provider SDKs and their transport (headers, each body read), and a
   * stream's no-progress deadline: keep-alive comments and pings do not reset it (src/providers/session.ts).
   */
  PROVIDER_TIMEOUT_MS: ms(1000).default(600_000),
  /** Provider resilience (src/providers/resilience/): retries of a call that failed before any output, their budget, breakers, fallbacks. */
  PROVIDER_RETRIES: int(0, 10).default(2),
  PROVIDER_RETRY_BASE_MS: int(0, 60_000).default(250),
  PROVIDER_RETRY_MAX_WAIT_MS: int(0, 600_000).default(10_000),
  PROVIDER_RETRY_BUDGET_PERCENT: int(0, 100).default(20),
  /** Consecutive failed calls that open a provider's (and model's) breaker; 0 turns breakers off. */
  PROVIDER_BREAKER_FAILURES: int(0, 10_000).default(5),
  PROVIDER_BREAKER_OPEN_MS: ms(1).default(15_000),
  PROVIDER_FALLBACKS: fallbacks.default({}),
  /** HTTP/2 toward https provider origins that offer it (src/providers/h2-fetch.ts); false: HTTP/1.1 only. */
  PROVIDER_HTTP2: bool.default(true),
  /** `http` provider origins that speak HTTP/2 without TLS (prior knowledge): their calls share connections too. */
  PROVIDER_H2C_ORIGINS: h2cOrigins.default([]),

  ENGINE_A_API_KEY: optionalText,
  ENGINE_A_BASE_URL: url.optional(),

  CHAT_WEB_SEARCH_ENGINE: z.enum(['engine_a', 'engine_b']).default('engine_a'),
  CHAT_ENGINE_B_BASE_URL: url.optional(),
  CHAT_MAX_TOOL_ROUNDS: int(1, 10_000).default(100),
  /**
   * With tools offered, how long a round's text may be held while it is not known whether the round
   * ends in tool calls (spec: "briefly"; actors/text-gate.ts). 0 lets text out at once.
   */
  TOOL_TEXT_HOLD_MS: int(0, 10_000).default(250),
  /** The same hold's bound in characters: past either bound the held text goes out. */
  TOOL_TEXT_HOLD_CHARS: int(0, 1_000_000).default(512),
  CHAT_CODING_TOOL_ENABLED: bool.default(false),
  CHAT_SHELL_TOOL_ENABLED: bool.default(false),
  CHAT_CODING_REMOTE_HOST: optionalText,
  CHAT_CODING_REMOTE_USER: optionalText,
  CHAT_CODING_REMOTE_PORT: int(1, 65535).default(22),
  CHAT_CODING_REMOTE_WORKDIR: z.string().min(1).default('~/chat-workspace'),
  CHAT_CODING_SSH_KEY_PATH: optionalText,
  CHAT_CODING_SSH_PRIVATE_KEY_B64: optionalText,
  /** The remote host key's fingerprint as `ssh-keygen -lf` prints it (`SHA256:…`); unset accepts any host key. */
  CHAT_CODING_SSH_HOST_KEY_SHA256: z
    .string()
    .regex(/^(SHA256:)?[A-Za-z0-9+/]{43}=?$/, 'must be a SHA256 fingerprint as ssh-keygen -lf prints it (SHA256:…)')
    .optional(),
  /** Command prefix of the remote coding CLI's non-interactive exec mode; the task is appended, shell-quoted. */
  CHAT_CODING_COMMAND: z
    .string()
    .min(1)
    .default('codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check'),
  CHAT_CODING_EXEC_TIMEOUT_MS: ms(1).default(600_000),
  /**
   * SSH handshakes to the remote host at once from this process (shared out among the actor threads);
   * the rest wait their turn. Under a stock sshd's MaxStartups (10), which drops handshakes past it.
   */
  CHAT_CODING_SSH_MAX_HANDSHAKES: int(1, 1000).default(8),
  CHAT_SHELL_EXEC_TIMEOUT_MS: ms(1).default(120_000),
  FETCH_URL_ALLOW_PRIVATE: bool.default(false),
});

export type Config = z.infer<typeof schema> & { actorThreads: number; instanceId: string; runTakeover: boolean; modelPrices: PriceTable };

export class ConfigError extends ServiceError {
  constructor(message: string) {
    super(ErrorCodes.CONFIG, message);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the environment. Throws ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings mean "unset" for optional variables, as shells and compose files often pass them.
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  const c = parsed.data;
  if ((c.CHAT_CODING_TOOL_ENABLED || c.CHAT_SHELL_TOOL_ENABLED) && !c.CHAT_CODING_REMOTE_HOST) {
    throw new ConfigError(
      'invalid configuration: CHAT_CODING_REMOTE_HOST is required when CHAT_CODING_TOOL_ENABLED or CHAT_SHELL_TOOL_ENABLED is true',
    );
  }
  // The openai SDK would send provider_c's key to its own default address, which is not provider_c.
  if (c.PROVIDER_C_API_KEY && !c.PROVIDER_C_BASE_URL) {
    throw new ConfigError(
      'invalid configuration: PROVIDER_C_BASE_URL is required when PROVIDER_C_API_KEY is set (provider_c has no default address)',
    );
  }
  // NODE_ENV=production never starts the simulator, whatever SIMULATE says (upstreams.ts).
  const simulatorOff = c.SIMULATE === 'off' || c.NODE_ENV === 'production';
  if (c.CHAT_WEB_SEARCH_ENGINE === 'engine_b' && !c.CHAT_ENGINE_B_BASE_URL && simulatorOff) {
    throw new ConfigError('invalid configuration: CHAT_ENGINE_B_BASE_URL is required when CHAT_WEB_SEARCH_ENGINE=engine_b');
  }
  if (c.REDIS_URL && !c.DATABASE_URL) {
    throw new ConfigError('invalid configuration: REDIS_URL (cluster mode) needs DATABASE_URL: the instances of a cluster share one Postgres');
  }
  // Without a JWKS no JWT is ever accepted: an issuer or audience alone means single sign-on was meant but is off.
  const ssoPart = c.AUTH_ISSUER ? 'AUTH_ISSUER' : c.AUTH_AUDIENCE ? 'AUTH_AUDIENCE' : undefined;
  if (ssoPart && !c.AUTH_JWKS_URL) {
    throw new ConfigError(`invalid configuration: AUTH_JWKS_URL is required when ${ssoPart} is set (single sign-on verifies tokens against it)`);
  }
  // Users exist in token mode only: without ADMIN_TOKEN every request would be the admin, JWT or none.
  if (c.AUTH_JWKS_URL && !c.ADMIN_TOKEN) {
    throw new ConfigError(
      'invalid configuration: AUTH_JWKS_URL needs ADMIN_TOKEN (without it the service is in open mode, where every request is the admin and no JWT is checked)',
    );
  }
  const actorThreads = c.ACTOR_THREADS ?? Math.max(1, os.availableParallelism() - 1);
  const instanceId = c.INSTANCE_ID ?? `${os.hostname()}:${c.PORT}`;
  // A takeover needs a peer to hand the run's chat to: without a cluster there is none.
  const runTakeover = (c.RUN_TAKEOVER ?? true) && c.REDIS_URL !== undefined;
  return { ...c, actorThreads, instanceId, runTakeover, modelPrices: priceTable(c.MODEL_PRICES) };
}

function priceTable(path: string | undefined): PriceTable {
  try {
    return readPriceTable(path);
  } catch (err) {
    if (err instanceof PriceTableError) throw new ConfigError(`invalid configuration: MODEL_PRICES: ${err.message}`);
    throw err;
  }
}
