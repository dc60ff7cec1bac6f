// The one retry loop of provider calls, inside every adapter's session (the SDKs' own retries are off):
// a call that fails before any output with a failure another call may not meet is retried up to
// PROVIDER_RETRIES times, after the provider's retry-after or a jittered exponential backoff, while the
// retry budget allows; the breaker of the provider and model is asked before each call and told how it
// ended. A round that still fails, the first or a later tool round, goes on on the next model of its
// fallback chain (PROVIDER_FALLBACKS): before any of that round's output, any model; after its text went
// out, only one whose API continues an assistant turn (provider_b, by prefill, as a takeover does). The run
// sees one stream of text and one round end.
import { setTimeout as sleep } from 'node:timers/promises';
import type { FallbackTarget } from '../../base/config.ts';
import { isAbortError, ProviderAbortError } from '../errors.ts';
import {
  addUsage,
  ProviderUnavailableError,
  type CompletionRequest,
  type FailedCall,
  type FallbackNote,
  type HintSink,
  type ProviderAdapter,
  type ProviderMessage,
  type ProviderName,
  type ProviderSession,
  type RoundEnd,
  type TextSink,
  type ToolResultInput,
  type Usage,
} from '../types.ts';
import type { Admit, Breakers } from './breaker.ts';
import type { RetryBudget } from './budget.ts';
import type { RoundRetry } from '../session.ts';
import { isTransientFailure, outcomeOf, retryWaitMs, type ResilienceSettings } from './policy.ts';
import { bump, type ResilienceStats } from './stats.ts';
import { noteRetry } from '../../telemetry/retry-events.ts';

/** What every resilient session of a thread shares. */
export interface Resilience {
  settings: ResilienceSettings;
  budget: RetryBudget;
  breakers: Breakers;
  stats: ResilienceStats;
  /** Every `provider/model` breaker this thread asked, for the breaker gauge. */
  keys: Set<string>;
  /** Settles true once budgets and breakers are shared through Redis, false when they stay local. */
  shared: Promise<boolean>;
  /**
   * Until Redis first answered (at most SHARE_WAIT_MS after the start), calls wait for it, so that an
   * instance's first calls do not go by its own breakers alone; null from then on.
   */
  sharing: Promise<unknown> | null;
}

/** How long an instance's first provider calls wait for the cluster's budgets and breakers. */
export const SHARE_WAIT_MS = 2000;

/** Providers whose API continues a trailing assistant turn (a prefill). */
const CONTINUES_PREFILL: ReadonlySet<ProviderName> = new Set(['provider_b']);

/** The same adapters, each session going through the retry loop, the breakers and the fallbacks. */
export function resilientProviders(adapters: Map<ProviderName, ProviderAdapter>, r: Resilience): Map<ProviderName, ProviderAdapter> {
  const out = new Map<ProviderName, ProviderAdapter>();
  for (const [name, adapter] of adapters) {
    out.set(name, {
      name,
      listModels: (signal, opts) => adapter.listModels(signal, opts),
      startSession: (req) => new ResilientSession(adapters, r, { provider: name, model: req.model }, req),
    });
  }
  return out;
}

interface Target {
  provider: ProviderName;
  model: string;
}

const label = (t: Target): string => `${t.provider}/${t.model}`;

/** The messages with `text` as (the end of) a trailing assistant turn, for a provider to continue. */
function withPrefill(messages: ProviderMessage[], text: string): ProviderMessage[] {
  const last = messages.at(-1);
  if (last?.role === 'assistant') return [...messages.slice(0, -1), { ...last, content: last.content + text }];
  return [...messages, { role: 'assistant', content: text }];
}

/**
 * The retry loop of one round's call on one provider and model: the breaker asked before each call and
 * told how it ended, a failure before any output with a transient cause retried while PROVIDER_RETRIES,
 * the provider's retry-after (up to PROVIDER_RETRY_MAX_WAIT_MS) and the retry budget allow. The wait is
 * the run's own: its stream stays open and its heartbeats go on.
 */
export function retryLoop(r: Resilience): RoundRetry {
  return async (provider, req, once, onText) => {
    const { settings, stats } = r;
    const key = `${provider}/${req.model}`;
    let output = false;
    let admit: Admit | null = null;
    // The provider answering is the breaker's success, told at the first text: a stream lasts long after
    // its provider proved up, and failures (which come at once) must not meet only stale successes.
    const answered = (): void => {
      if (admit) void r.breakers.record(key, false);
    };
    const sink: TextSink = (text) => {
      if (!output) (output = true, answered());
      onText(text);
    };
    if (r.sharing) await r.sharing;
    for (let retry = 0; ; retry++) {
      admit = settings.breakerFailures > 0 ? await r.breakers.admit(key) : null;
      r.keys.add(key);
      if (admit && !admit.allow) {
        bump(stats.calls, `${provider}|breaker_open`);
        throw new ProviderUnavailableError(provider, admit.retryAfterMs);
      }
      if (retry === 0) r.budget.deposit(provider);
      try {
        const end = await once(sink);
        bump(stats.calls, `${provider}|ok`);
        if (!output) answered();
        return end;
      } catch (err) {
        if (isAbortError(err)) throw err;
        bump(stats.calls, `${provider}|${outcomeOf(err)}`);
        const transient = isTransientFailure(err);
        if (admit) await r.breakers.record(key, transient);
        if (!transient || output || retry >= settings.retries) throw err;
        const wait = retryWaitMs(retry + 1, err, settings);
        if (wait === null || !(await r.budget.withdraw(provider))) throw err;
        bump(stats.retries, provider);
        noteRetry(req.signal, retry + 1);
        try {
          await sleep(wait, undefined, { signal: req.signal });
        } catch (abort) {
          throw new ProviderAbortError(provider, { cause: req.signal.reason ?? abort });
        }
      }
    }
  };
}

/** The counts, with each provider's breakers as they stand now (1: one of its models' is open). */
export function statsOf(r: Resilience): ResilienceStats {
  const breakerOpen: Record<string, number> = {};
  for (const key of r.keys) {
    const provider = key.slice(0, key.indexOf('/'));
    breakerOpen[provider] = Math.max(breakerOpen[provider] ?? 0, r.breakers.openNow(key) ? 1 : 0);
  }
  return { ...r.stats, breakerOpen };
}

/**
 * A session that goes on on the next model of its chain when a round fails for good (its calls are
 * retried inside each adapter's session, by retryLoop): any round, a tool round too, since it keeps the
 * conversation as every provider reads it (the request's messages, then each round's assistant turn
 * with its tool calls and their results) while its chain has a model left to move to.
 */
class ResilientSession implements ProviderSession {
  private target: Target;
  private session: ProviderSession;
  /** When the current target's session began: a failed call lasts from there (its earlier rounds included). */
  private began = performance.now();
  /** The fallback taken (its `to` the last model moved to). */
  private fallback: FallbackNote | undefined;
  /** The calls that failed before the current target, each to be stored as its own LlmCall. */
  private readonly failed: FailedCall[] = [];
  private readonly used = new Set<ProviderName>();
  /** The conversation so far, for the next model; kept only while the chain has one. */
  private readonly history: ProviderMessage[];
  /** The usage of the rounds the current target answered: its LlmCall's, should a later round move on. */
  private answered: Usage | null = null;

  constructor(
    private readonly adapters: Map<ProviderName, ProviderAdapter>,
    private readonly r: Resilience,
    first: Target,
    private readonly req: CompletionRequest,
  ) {
    this.target = first;
    this.session = adapters.get(first.provider)!.startSession(req);
    this.used.add(first.provider);
    this.history = [...req.messages];
  }

  async round(results: ToolResultInput[] | null, onText: TextSink, onHint?: HintSink): Promise<RoundEnd> {
    // Without a model left in the chain, nothing is kept: the round is the session's own.
    if (this.nextTarget(false) === null) return this.session.round(results, onText, onHint);
    for (const r of results ?? []) this.history.push({ role: 'tool', content: r.output, name: r.name, toolCallId: r.callId });
    // The round's text: its assistant turn in the history, or, after a failure, what a model continues.
    let text = '';
    const sink: TextSink = (t) => {
      text += t;
      onText(t);
    };
    let pending = results;
    for (;;) {
      try {
        // A failed call reports no usage: the round's is the call that answered.
        const end = await this.session.round(pending, sink, onHint);
        if (end.toolCalls.length > 0) this.history.push({ role: 'assistant', content: text, toolCalls: end.toolCalls });
        this.answered = addUsage(this.answered, end.usage);
        if (!this.fallback) return end;
        const { provider, model } = this.target;
        return { ...end, fallback: this.fallback, fallbackCalls: { failed: this.failed, provider, model } };
      } catch (err) {
        // After output only a model that continues the text may go on (never one that starts it again).
        const out = text !== '';
        const next = !isAbortError(err) && !this.req.signal.aborted ? this.nextTarget(out) : null;
        if (!next) throw err;
        this.moveTo(next, text, err);
        // The new session's first round starts from the history, this round's tool results included.
        pending = null;
      }
    }
  }

  /** The next model of the chain not tried yet; after output only one that continues a prefill. */
  private nextTarget(afterOutput: boolean): Target | null {
    const chains = this.r.settings.fallbacks;
    for (let t: FallbackTarget | undefined = chains[this.target.provider]; t; t = chains[t.provider]) {
      if (this.used.has(t.provider)) return null;
      if (!this.adapters.has(t.provider)) continue;
      if (!afterOutput || CONTINUES_PREFILL.has(t.provider)) return t;
    }
    return null;
  }

  private moveTo(next: Target, streamed: string, err: unknown): void {
    const from = this.target;
    const reason = err instanceof Error ? err.message : String(err);
    const now = performance.now();
    this.failed.push({ provider: from.provider, model: from.model, error: reason, ms: now - this.began, ...(this.answered && { usage: this.answered }) });
    this.began = now;
    this.answered = null;
    this.fallback = { from: this.fallback?.from ?? label(from), to: label(next), reason: this.fallback?.reason ?? reason };
    bump(this.r.stats.fallbacks, `${from.provider}|${next.provider}`);
    // After output the next model continues the text as its own assistant turn (a prefill).
    const messages = streamed === '' ? [...this.history] : withPrefill(this.history, streamed);
    this.target = next;
    this.used.add(next.provider);
    this.session = this.adapters.get(next.provider)!.startSession({ ...this.req, model: next.model, messages });
  }
}
