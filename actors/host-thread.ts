// A worker thread hosting actors. It builds its own resources (database pool, provider clients)
// from the plain data the supervisor hands it, and speaks to the main thread in batches.
import { parentPort, workerData } from 'node:worker_threads';
import { createRunDeps, type RunDepsInput } from '../src/run-deps.ts';
import { createHost } from './runtime/host.ts';
import { runners } from './runners.ts';
import { startLagReport } from './lag-report.ts';
import type { ToHost } from './runtime/protocol.ts';
import type { CheckpointReport } from './hosts.ts';

const port = parentPort!;
// One small message per checkpoint statement (at most one per CHECKPOINT_MS): /metrics counts them on the main thread.
const checkpointed: CheckpointReport = { t: 'checkpoint' };
const deps = await createRunDeps(workerData as RunDepsInput, () => port.postMessage(checkpointed));
const host = createHost(runners, deps, (batch) => port.postMessage(batch));
// The supervisor sends a turn's messages as one array (hosts.ts).
port.on('message', (msgs: ToHost[]) => {
  for (let i = 0; i < msgs.length; i++) host.receive(msgs[i]!);
});
port.postMessage({ t: 'ready' });
const { config } = workerData as RunDepsInput;
startLagReport((report) => port.postMessage(report), config.OVERLOAD_LAG_MS > 0 || config.OVERLOAD_BUSY_PERCENT > 0);
