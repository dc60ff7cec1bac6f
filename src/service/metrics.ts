// Prometheus metrics (prom-client). Run outcomes are observed on the main thread when a run's
// terminal event arrives, so worker threads need no metrics plumbing of their own.
import client from 'prom-client';
import type { RunSupervisor } from '../../actors/runs.ts';
import type { Admission, RefusalReason } from '../admission/admission.ts';
import type { SseStreams } from '../http/sse.ts';
import type { ResilienceStats } from '../providers/resilience/index.ts';
import type { RecoveredRuns } from '../store/recovery.ts';
import { openFdsOffThread } from './open-fds.ts';
import { genAiMetrics, type GenAiObservation } from '../telemetry/genai-metrics.ts';

export interface Metrics {
  registry: client.Registry;
  observeRun(kind: string, provider: string, ok: boolean, seconds: number): void;
  /** Stops a user asked for that reached a run (`kind`: chat or search). */
  runsStopped: client.Counter<'kind'>;
  /** Keyed completion requests answered without starting a run (`mode`: stream or whole). */
  idempotentReplays: client.Counter<'mode'>;
  /** Starts refused with 409 because the chat already had an active run. */
  startConflicts: client.Counter<'kind'>;
  /** Checkpoint statements written by this process's actor hosts (CHECKPOINT_MS). */
  checkpoints: client.Counter;
  /** A provider call ended (the GenAI histograms). */
  observeGenAi(o: GenAiObservation): void;
  /** Requests of the OpenAI-compatible API (`api`: models, chat_completions, responses) by answer status. */
  openaiRequests: client.Counter<'api' | 'status'>;
}

/** prom-client's event-loop delay sampling interval. */
const EVENT_LOOP_PRECISION_MS = 100;

/** `recovered`: the server's tally of runs recovered from lost instances (store/recovery.ts). */
/** `providerStats`: what the resilience layer of every thread did (src/providers/resilience/stats.ts). */
export function createMetrics(
  supervisor: RunSupervisor,
  sse: Pick<SseStreams, 'openCount'>,
  recovered: RecoveredRuns,
  admission?: Admission,
  providerStats?: () => ResilienceStats,
): Metrics {
  const registry = new client.Registry();
  // prom-client samples the event-loop delay on a timer: at its default 10 ms that timer is ~100 wake-ups a
  // second of the main thread, idle or not (docs/performance.md, ninth round). A tenth of that is plenty for
  // a dashboard's nodejs_eventloop_lag_*; the overload signal (css_event_loop_lag_p99_ms) has its own.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_PRECISION_MS });
  openFdsOffThread(registry);
  if (admission) admissionMetrics(registry, admission, supervisor);
  if (providerStats) resilienceMetrics(registry, providerStats);
  new client.Gauge({
    name: 'css_active_runs',
    help: 'Runs active on this process',
    registers: [registry],
    collect() {
      // Counts the supervisor keeps, not a list of its runs: a scrape costs the same under a flood.
      this.set({ kind: 'chat_persisted' }, supervisor.keyedCount('chat'));
      this.set({ kind: 'search' }, supervisor.keyedCount('search'));
      this.set({ kind: 'title' }, supervisor.keyedCount('title'));
      this.set({ kind: 'all' }, supervisor.activeCount);
    },
    labelNames: ['kind'],
  });
  new client.Gauge({ name: 'css_open_sse_streams', help: 'Open SSE responses', registers: [registry], collect() { this.set(sse.openCount); } });
  new client.Counter({
    name: 'css_events_sent_total',
    help: 'SSE events delivered to subscribers',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(supervisor.stats.eventsSent);
    },
  });
  new client.Counter({
    name: 'css_slow_clients_dropped_total',
    help: 'SSE subscribers dropped for not reading fast enough',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(supervisor.stats.slowClientsDropped);
    },
  });
  new client.Counter({
    name: 'css_runs_recovered_total',
    help: 'Chat runs of a lost instance recovered by this process (interrupted: failed, its checkpointed text kept; continued: taken over)',
    labelNames: ['how'],
    registers: [registry],
    collect() {
      this.reset();
      this.inc({ how: 'interrupted' }, recovered.interrupted);
      this.inc({ how: 'continued' }, recovered.continued);
    },
  });
  const runDuration = new client.Histogram({
    name: 'css_run_duration_seconds',
    help: 'Run duration by kind, provider and outcome (provider latency including tool rounds)',
    labelNames: ['kind', 'provider', 'outcome'],
    buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const runErrors = new client.Counter({
    name: 'css_run_errors_total',
    help: 'Runs that ended in an error, by kind and provider',
    labelNames: ['kind', 'provider'],
    registers: [registry],
  });
  const runsStopped = new client.Counter({ name: 'css_runs_stopped_total', help: 'Runs stopped by a user', labelNames: ['kind'], registers: [registry] });
  const idempotentReplays = new client.Counter({
    name: 'css_idempotent_replays_total',
    help: 'Requests with a known Idempotency-Key that attached to, waited for or replayed a run instead of starting one',
    labelNames: ['mode'],
    registers: [registry],
  });
  const startConflicts = new client.Counter({
    name: 'css_start_conflicts_total',
    help: 'Starts refused with 409: an active stream already exists for the chat',
    labelNames: ['kind'],
    registers: [registry],
  });
  const checkpoints = new client.Counter({
    name: 'css_checkpoints_total',
    help: 'Checkpoint statements written: each holds the text streamed since the last one by all of an actor host\'s running chat runs',
    registers: [registry],
  });
  const openaiRequests = new client.Counter({
    name: 'css_openai_requests_total',
    help: 'Requests of the OpenAI-compatible API (/openai/v1) by api (models, chat_completions, responses) and answer status',
    labelNames: ['api', 'status'],
    registers: [registry],
  });
  return {
    registry,
    openaiRequests,
    runsStopped,
    idempotentReplays,
    startConflicts,
    checkpoints,
    observeGenAi: genAiMetrics(registry),
    observeRun(kind, provider, ok, seconds) {
      runDuration.observe({ kind, provider, outcome: ok ? 'ok' : 'error' }, seconds);
      if (!ok) runErrors.inc({ kind, provider });
    },
  };
}

/** A counter family read from `counts` (`a|b` keys → the two labels) when scraped. */
function countsFrom(registry: client.Registry, name: string, help: string, labelNames: string[], counts: () => Record<string, number>, kind: 'counter' | 'gauge' = 'counter'): void {
  const Metric = kind === 'counter' ? client.Counter : client.Gauge;
  new Metric({
    name,
    help,
    labelNames,
    registers: [registry],
    collect(this: client.Counter | client.Gauge) {
      this.reset();
      for (const [key, n] of Object.entries(counts())) {
        const values = key.split('|');
        const labels = Object.fromEntries(labelNames.map((l, i) => [l, values[i] ?? '']));
        if (this instanceof client.Gauge) this.set(labels, n);
        else this.inc(labels, n);
      }
    },
  });
}

/** Provider calls by outcome, retries, open breakers and fallbacks (PROVIDER_RETRIES, …, PROVIDER_FALLBACKS). */
function resilienceMetrics(registry: client.Registry, stats: () => ResilienceStats): void {
  countsFrom(registry, 'css_provider_calls_total', 'Provider calls by outcome (ok, rate_limited, unavailable, timeout, error; breaker_open: refused without a call)', ['provider', 'outcome'], () => stats().calls);
  countsFrom(registry, 'css_provider_retries_total', 'Provider calls retried by the service (within PROVIDER_RETRIES and the retry budget)', ['provider'], () => stats().retries);
  countsFrom(registry, 'css_provider_breaker_open', '1 while a circuit breaker of the provider (one of its models) is open, as last seen by this instance', ['provider'], () => stats().breakerOpen, 'gauge');
  countsFrom(registry, 'css_runs_fallback_total', 'Runs that went on on the next model of PROVIDER_FALLBACKS', ['from', 'to'], () => stats().fallbacks);
}

const REFUSAL_REASONS: RefusalReason[] = ['capacity', 'overload', 'draining', 'user_runs', 'user_tokens', 'user_cost'];

/** What the admission decided: draining or not, the limit on starts in flight and what moves it, the starts waiting, and its refusals. */
function admissionMetrics(registry: client.Registry, admission: Admission, supervisor: RunSupervisor): void {
  new client.Gauge({ name: 'css_draining', help: '1 while this instance drains (after SIGTERM/SIGINT), else 0', registers: [registry], collect() { this.set(admission.draining ? 1 : 0); } });
  new client.Gauge({
    name: 'css_event_loop_lag_p99_ms',
    help: 'Worst event-loop delay p99 over the last second among the main and actor threads (it shrinks the start limit above 50 ms; 0 with ADMISSION=off)',
    registers: [registry],
    collect() {
      this.set(admission.lagMs);
    },
  });
  new client.Gauge({
    name: 'css_event_loop_busy_percent',
    help: 'The busiest of the main and actor threads: the percentage of its last 200 ms its event loop was busy',
    registers: [registry],
    collect() {
      this.set(Math.round(admission.busyNow() * 100));
    },
  });
  new client.Gauge({
    name: 'css_start_backlog',
    help: 'Starts in flight: handed to the actor threads and not yet taken up, or for a chat its first statement not yet answered (at most css_start_limit)',
    registers: [registry],
    collect() {
      this.set(supervisor.startBacklog);
    },
  });
  new client.Gauge({
    name: 'css_start_limit',
    help: 'The adaptive limit on starts in flight, moved by their latency and the threads\' event-loop lag (ADMISSION=adaptive)',
    registers: [registry],
    collect() {
      this.set(admission.limit.value);
    },
  });
  new client.Gauge({
    name: 'css_starts_waiting',
    help: 'Starts accepted and waiting for their turn under css_start_limit',
    registers: [registry],
    collect() {
      this.set(admission.waiting);
    },
  });
  new client.Counter({
    name: 'css_runs_refused_total',
    help: 'New runs refused, by reason (503 capacity: MAX_ACTIVE_RUNS; overload: a flood that lasts, judged by the start queue (ADMISSION); draining: after SIGTERM; 429 user_runs: a user\'s active runs; user_tokens: a user\'s daily token budget; user_cost: their daily cost budget)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const reason of REFUSAL_REASONS) this.inc({ reason }, admission.refused[reason]);
    },
  });
}
