// The model lists of GET /v1/models. Each configured provider's list loads in the background at start
// (the server never waits for it) and again about every 24 hours; each provider loads on its own, with
// its own timeout, so a slow or failing one never holds up another. A failed load keeps the last list
// and sets `error` to the latest failure; `loadedAt` is the last successful load. Time comes from the
// AppContext clock, so tests move the clock instead of waiting a day: a due refresh starts on the next
// timer tick or the next read, whichever comes first.
import type { Config } from '../base/config.ts';
import type { Clock } from '../base/clock.ts';
import { providerKeyVariable } from '../providers/index.ts';
import { PROVIDERS, type ProviderAdapter, type ProviderName } from '../providers/types.ts';

export interface ProviderModels {
  models: string[];
  loadedAt: string | null;
  error: string | null;
  /**
   * Present (true) when the offline simulator serves this provider because its key is unset. Then
   * provider_d is listed without AGENT_PROVIDER_API_KEY, which the spec's rule would not do.
   */
  simulated?: true;
}

export type ModelLister = (signal: AbortSignal) => Promise<string[]>;

export const REFRESH_INTERVAL_MS = 24 * 60 * 60 * 1000;
/** After a failed load, try again sooner than the full interval (a start during an outage must not leave lists empty for a day). */
export const RETRY_AFTER_FAILURE_MS = 15 * 60 * 1000;
export const LOAD_TIMEOUT_MS = 20_000;
/** How often the timer checks whether a refresh is due (the clock decides, not the timer). */
export const TICK_MS = 60 * 1000;

export interface ModelRegistryOptions {
  /** Providers that can list models (configured ones). */
  listers: Map<ProviderName, ModelLister>;
  /** Providers shown without a key: empty list and an error naming the variable to set. */
  unconfigured: ProviderName[];
  /** Ids always in a provider's list (AGENT_PROVIDER_MODEL for provider_d), listed first. */
  extraModels?: Partial<Record<ProviderName, string>>;
  /** Providers served by the offline simulator: marked `simulated: true` in the listing. */
  simulated?: readonly string[];
  clock: Clock;
  refreshMs?: number;
  retryMs?: number;
  timeoutMs?: number;
  tickMs?: number;
  onError?: (provider: ProviderName, message: string) => void;
}

interface Slot {
  list: ModelLister | null;
  models: string[];
  loadedAt: string | null;
  error: string | null;
  /** Clock time at which the next load is due; Infinity for unconfigured providers. */
  dueAt: number;
  loading: Promise<void> | null;
}

export class ModelRegistry {
  private readonly slots = new Map<ProviderName, Slot>();
  private readonly opts: Required<Omit<ModelRegistryOptions, 'onError' | 'extraModels' | 'simulated'>> &
    Pick<ModelRegistryOptions, 'onError' | 'extraModels' | 'simulated'>;
  private readonly stopper = new AbortController();
  private timer: NodeJS.Timeout | null = null;

  constructor(opts: ModelRegistryOptions) {
    this.opts = {
      refreshMs: REFRESH_INTERVAL_MS,
      retryMs: RETRY_AFTER_FAILURE_MS,
      timeoutMs: LOAD_TIMEOUT_MS,
      tickMs: TICK_MS,
      ...opts,
    };
    for (const name of PROVIDERS) {
      const list = opts.listers.get(name);
      if (list) {
        this.slots.set(name, { list, models: this.withExtra(name, []), loadedAt: null, error: null, dueAt: 0, loading: null });
      } else if (opts.unconfigured.includes(name)) {
        const error = `${name} is not configured: set ${providerKeyVariable(name)}`;
        this.slots.set(name, { list: null, models: [], loadedAt: null, error, dueAt: Infinity, loading: null });
      }
    }
  }

  /** Starts the first loads (not awaited) and the refresh timer. */
  start(): void {
    if (this.timer || this.stopper.signal.aborted) return;
    this.refreshDue();
    this.timer = setInterval(() => this.refreshDue(), this.opts.tickMs);
    this.timer.unref();
  }

  /** Stops the timer and abandons loads in flight. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.stopper.abort(new Error('model registry stopped'));
  }

  /** Starts the loads that are due; resolves when they have settled (callers need not wait). */
  refreshDue(): Promise<void> {
    const now = this.opts.clock.now();
    const loads: Promise<void>[] = [];
    for (const [name, slot] of this.slots) {
      if (slot.loading) loads.push(slot.loading);
      else if (slot.list && now >= slot.dueAt) loads.push(this.load(name, slot));
    }
    return Promise.all(loads).then(() => undefined);
  }

  /** Loads every configured provider now, whatever is due; resolves when all have settled. */
  refreshAll(): Promise<void> {
    for (const slot of this.slots.values()) if (slot.list) slot.dueAt = 0;
    return this.refreshDue();
  }

  /** The listing as GET /v1/models returns it. Kicks off any refresh that is due (without waiting for it). */
  snapshot(): Record<string, ProviderModels> {
    if (this.timer) void this.refreshDue();
    const out: Record<string, ProviderModels> = {};
    const simulated = this.opts.simulated;
    for (const [name, slot] of this.slots) {
      const entry: ProviderModels = { models: [...slot.models], loadedAt: slot.loadedAt, error: slot.error };
      if (simulated?.includes(name)) entry.simulated = true;
      out[name] = entry;
    }
    return out;
  }

  private withExtra(name: ProviderName, models: string[]): string[] {
    const extra = this.opts.extraModels?.[name];
    return [...new Set(extra ? [extra, ...models] : models)];
  }

  private load(name: ProviderName, slot: Slot): Promise<void> {
    const { clock, timeoutMs, refreshMs, retryMs } = this.opts;
    const startedAt = clock.now();
    // Due again one interval after this attempt began, so a slow load never causes a second one in flight.
    slot.dueAt = startedAt + refreshMs;
    const signal = AbortSignal.any([this.stopper.signal, AbortSignal.timeout(timeoutMs)]);
    let timer: NodeJS.Timeout | undefined;
    // A lister that ignores its signal still cannot hold the slot past the timeout.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${name} model list timed out after ${timeoutMs} ms`)), timeoutMs + 100);
      timer.unref();
    });
    const work = Promise.race([slot.list!(signal), deadline]).then(
      (models) => {
        if (this.stopper.signal.aborted) return;
        slot.models = this.withExtra(name, models.filter((m) => typeof m === 'string' && m !== ''));
        slot.loadedAt = new Date(clock.now()).toISOString();
        slot.error = null;
      },
      (err: unknown) => {
        if (this.stopper.signal.aborted) return;
        const timedOut = signal.aborted && !this.stopper.signal.aborted;
        const message = timedOut
          ? `${name} model list timed out after ${timeoutMs} ms`
          : err instanceof Error
            ? err.message
            : String(err);
        slot.error = message;
        slot.dueAt = Math.min(slot.dueAt, startedAt + retryMs);
        this.opts.onError?.(name, message);
      },
    );
    slot.loading = work.finally(() => {
      clearTimeout(timer);
      slot.loading = null;
    });
    return slot.loading;
  }
}

/**
 * What lists each provider's models. provider_d's adapter answers a failed listing with just
 * AGENT_PROVIDER_MODEL (its chat path needs a model either way); the registry must see the failure
 * to keep the last list and report it, so provider_d is listed without that fallback (same client),
 * and the registry adds AGENT_PROVIDER_MODEL itself.
 */
export function createModelRegistry(
  config: Config,
  providers: Map<ProviderName, ProviderAdapter>,
  clock: Clock,
  onError?: ModelRegistryOptions['onError'],
  simulated: readonly string[] = [],
): ModelRegistry {
  const listers = new Map<ProviderName, ModelLister>();
  for (const [name, adapter] of providers) listers.set(name, (signal) => adapter.listModels(signal));
  // The registry must see provider_d's listing fail (see above), so it asks without the fallback.
  const agent = providers.get('provider_d');
  if (agent) listers.set('provider_d', (signal) => agent.listModels(signal, { fallback: false }));
  // provider_d is listed only when its key is set; the others always, with an error when unkeyed.
  const unconfigured = PROVIDERS.filter((p) => p !== 'provider_d' && !listers.has(p));
  return new ModelRegistry({
    listers,
    unconfigured,
    extraModels: config.AGENT_PROVIDER_MODEL ? { provider_d: config.AGENT_PROVIDER_MODEL } : {},
    simulated,
    clock,
    onError,
  });
}
