// Issue 37's kill check: an instance carrying N persisted streams is SIGKILLed mid-stream and started
// again with the same INSTANCE_ID. For each stream, the interrupted answer recovered after the restart
// is compared with what its client had received when its connection broke (missing-text.ts). Pass:
// every partial answer recovered, each a prefix-consistent text, each missing at most CHECKPOINT_MS +
// 500 ms of stream time. The clients are the harness's raw-socket client (client.ts), in this process:
// the check needs each stream's text, not a tally.
// Knobs (env): BENCH_KILL=0 (off)  BENCH_KILL_N=1000  BENCH_KILL_AFTER=40 (deltas every stream has
//   received before the kill)  BENCH_KILL_CHECKPOINT_MS=1000  BENCH_KILL_STARTS=500 (starts/s)
import pg from 'pg';
import { openStream, parseBlock } from './client.ts';
import { serviceBody } from './bodies.ts';
import { judgeRecovered, type Judged } from './missing-text.ts';
import { Samples, summarize } from './stats.ts';
import { startService, type SimUrls } from './targets.ts';
import { sleep } from '../../test/helpers/procs.ts';

const env = process.env;
const num = (name: string, fallback: number) => Number(env[name] ?? fallback);
const RATE = 20;

interface Stream {
  chatId: string | null;
  deltas: number;
  text: string;
  closed: boolean;
}

/** Polls `ready` every 100 ms until it holds or `ms` pass; false at the deadline. */
async function until(ready: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await ready())) {
    if (Date.now() > end) return false;
    await sleep(100);
  }
  return true;
}

export async function runKillCheck(c: { sim: SimUrls; dbUrl: string | null; log(msg: string): void }): Promise<Record<string, unknown>> {
  if (!c.dbUrl) return { skipped: 'needs Postgres: the restarted instance reads the dead one’s checkpoints' };
  const n = num('BENCH_KILL_N', 1000);
  const after = num('BENCH_KILL_AFTER', 40);
  const checkpointMs = num('BENCH_KILL_CHECKPOINT_MS', 1000);
  const starts = num('BENCH_KILL_STARTS', 500);
  // Long enough that no stream ends before the kill: the ramp, the deltas to wait for, and a margin.
  const deltas = Math.ceil((n / starts + after / RATE) * RATE) + 40 * RATE;
  const svcEnv = { INSTANCE_ID: `bench-kill-${process.pid}`, CHECKPOINT_MS: String(checkpointMs) };
  const first = await startService({ sim: c.sim, databaseUrl: c.dbUrl, maxActiveRuns: n * 2 + 1000, env: svcEnv });
  const streams: Stream[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const s: Stream = { chatId: null, deltas: 0, text: '', closed: false };
      streams.push(s);
      openStream({ host: '127.0.0.1', port: first.port }, 'POST', '/v1/chat-completions/stream', {}, serviceBody('provider_c', true, deltas, RATE).replaceAll('__I__', `kill ${i}`), {
        onEvent: (block) => {
          const { event, data } = parseBlock(block);
          if (event === 'meta') s.chatId = JSON.parse(data).chatId;
          else if (event === 'delta') (s.text += JSON.parse(data).text, s.deltas++);
        },
        onClose: () => void (s.closed = true),
      });
      if (i % Math.max(1, Math.round(starts / 100)) === 0) await sleep(10);
    }
    const reached = await until(() => streams.every((s) => s.deltas >= after || s.closed), 120_000);
    c.log(`kill: ${n} streams, ${reached ? `each at ${after} deltas or more` : 'the deadline passed first'}; SIGKILL`);
    first.child.proc.kill('SIGKILL');
    await until(() => streams.every((s) => s.closed), 30_000);
  } finally {
    await first.child.stop();
  }
  const chatIds = streams.map((s) => s.chatId).filter((id): id is string => id !== null);
  const second = await startService({ sim: c.sim, databaseUrl: c.dbUrl, maxActiveRuns: n * 2 + 1000, env: svcEnv });
  const db = new pg.Client({ connectionString: c.dbUrl });
  await db.connect();
  try {
    const answers = async () => (await db.query<{ chat_id: string; content: string }>(
      "SELECT chat_id, content FROM messages WHERE chat_id = ANY($1) AND role = 'assistant' AND (metadata->>'interrupted')::boolean", [chatIds])).rows;
    let stored = await answers();
    await until(async () => (stored = await answers()).length >= chatIds.length, 60_000);
    const byChat = new Map(stored.map((r) => [r.chat_id, r.content]));
    const judged: Judged[] = streams.map((s) => judgeRecovered(s.text, s.chatId ? byChat.get(s.chatId) ?? null : null));
    const missing = new Samples();
    for (const j of judged) if (j.missingMs !== null) missing.push(j.missingMs);
    const bound = checkpointMs + 500;
    const dist = summarize(missing);
    const result = {
      job: { n, deltasBeforeKill: after, rate: RATE, checkpointMs, startsPerSec: starts },
      withChatId: chatIds.length,
      recovered: judged.filter((j) => j.recovered).length,
      inconsistent: judged.filter((j) => j.recovered && !j.consistent).length,
      missingMs: dist,
      boundMs: bound,
      pass: judged.every((j) => j.recovered && j.consistent) && chatIds.length === n && (dist.max ?? 0) <= bound,
    };
    c.log(`kill: ${result.recovered}/${n} recovered, ${result.inconsistent} inconsistent, missing ms p50 ${dist.p50} p99 ${dist.p99} max ${dist.max} (bound ${bound})`);
    return result;
  } finally {
    await db.end();
    await second.child.stop();
  }
}
