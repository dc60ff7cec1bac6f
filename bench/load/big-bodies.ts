// Latency of GET /health while twenty 30 MB bodies are parsed and checked at once (issue 16's target:
// p99 under 50 ms). The service runs as `make run` starts it, in its own process, so this process's
// own work is not in the figure. Not part of `make test` (timing on a shared machine is noise there).
//   node --import tsx bench/load/big-bodies.ts        BIG_BODIES=20 (count)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { bigCompletionBody } from '../../test/helpers/big-body.ts';
import { startService } from '../../test/helpers/process.ts';

const COUNT = Number(process.env.BIG_BODIES ?? 20);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const dataDir = mkdtempSync(path.join(tmpdir(), 'big-bodies-'));
const service = await startService({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' }, 600_000);
try {
  const body = bigCompletionBody(7);
  const health = async (): Promise<number> => {
    const start = performance.now();
    await (await fetch(`${service.url}/health`)).arrayBuffer();
    return performance.now() - start;
  };
  for (let i = 0; i < 20; i++) await health(); // warm
  let pending = COUNT;
  const started = performance.now();
  const big = Array.from({ length: COUNT }, async () => {
    try {
      const r = await fetch(`${service.url}/v1/chat-completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body as unknown as BodyInit });
      await r.arrayBuffer();
      return r.status;
    } finally {
      pending--;
    }
  });
  const samples: number[] = [];
  while (pending > 0) {
    samples.push(await health());
    await new Promise((r) => setTimeout(r, 5));
  }
  const statuses = await Promise.all(big);
  const elapsed = performance.now() - started;
  samples.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      bodies: COUNT,
      bodyMB: +(body.length / 1024 / 1024).toFixed(1),
      statuses: [...new Set(statuses)],
      seconds: +(elapsed / 1000).toFixed(1),
      healthSamples: samples.length,
      healthP50ms: +percentile(samples, 50).toFixed(1),
      healthP99ms: +percentile(samples, 99).toFixed(1),
      healthMaxMs: +samples.at(-1)!.toFixed(1),
    }),
  );
} finally {
  service.child.kill('SIGTERM');
  await service.exited;
  rmSync(dataDir, { recursive: true, force: true });
}
