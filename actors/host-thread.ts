// A worker thread hosting actors. It builds its own resources (database pool, provider clients)
// from the plain data the supervisor hands it, and speaks to the main thread in batches.
import { parentPort, workerData } from 'node:worker_threads';
import { createRunDeps, type RunDepsInput } from '../src/domain/run-deps.ts';
import { createHost } from './runtime/host.ts';
import { runners } from './runners.ts';
import { startLagReport } from './lag-report.ts';
import { reportStats, threadStats } from '../src/providers/resilience/index.ts';
import type { ToHost } from './runtime/protocol.ts';
import { handleWithin } from './runtime/turn-budget.ts';
import type { CheckpointReport, FLUSH, GenAiReport } from './hosts.ts';
import { stopTracing } from '../src/telemetry/tracing.ts';

const port = parentPort!;
// One small message per checkpoint statement (at most one per CHECKPOINT_MS): /metrics counts them on the main thread.
const checkpointed: CheckpointReport = { t: 'checkpoint' };
const deps = await createRunDeps(
  workerData as RunDepsInput,
  () => port.postMessage(checkpointed),
  // One small message per provider call, when it ends: the main thread's /metrics records it.
  (o) => port.postMessage({ t: 'genai', o } satisfies GenAiReport),
);
const host = createHost(runners, deps, (batch) => port.postMessage(batch));

/** How long one turn may spend on the main thread's messages before the thread's own I/O goes first. */
const HOST_TURN_BUDGET_MS = 5;
// The supervisor sends a turn's messages as one array (hosts.ts). Starts are the costly ones (~1 ms
// each): a burst of them handled in one turn held every running stream's provider text behind it. Past
// the budget the rest waits in `inbox`, in order, for a later turn; until then they count as not taken
// up, so the starts' latency the admission's limit reads sees a thread that is behind. A non-empty inbox is the one
// state: a slice is due, and later arrays queue behind it.
const inbox: ToHost[] = [];
const receive = (msg: ToHost): void => host.receive(msg);
const drainInbox = (): void => {
  inbox.splice(0, handleWithin(inbox, 0, receive, HOST_TURN_BUDGET_MS));
  if (inbox.length > 0) setImmediate(drainInbox);
};
port.on('message', (msgs: ToHost[] | typeof FLUSH) => {
  // The thread is about to be terminated: its batched spans go first.
  if (!Array.isArray(msgs)) return void stopTracing().then(() => port.postMessage({ t: 'flushed' }));
  // The common case, nothing waiting and a turn within budget, handles the array itself: no copy.
  const done = inbox.length > 0 ? 0 : handleWithin(msgs, 0, receive, HOST_TURN_BUDGET_MS);
  if (done === msgs.length) return;
  const wasEmpty = inbox.length === 0;
  for (let i = done; i < msgs.length; i++) inbox.push(msgs[i]!);
  if (wasEmpty) setImmediate(drainInbox);
});
port.postMessage({ t: 'ready' });
const { config } = workerData as RunDepsInput;
startLagReport((report) => port.postMessage(report), config.ADMISSION === 'adaptive');
// What this thread's provider calls met (calls, retries, breakers, fallbacks): /metrics sums it on the main thread.
reportStats(threadStats, (report) => port.postMessage(report));
