// A load job in a process of its own (the burst and long-answer generators), so that the sending
// side's CPU and event loop are not the harness's: the job goes in as one JSON argument, the result
// comes back as the last line of stdout.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** Runs `file` (a module that calls `serveJob`) with `job`; its result. */
export async function inOwnProcess<R>(file: string, job: unknown): Promise<R> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file, JSON.stringify(job)], { maxBuffer: 1 << 26 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as R;
}

/** In the module run as `file`: runs the job given on the command line and prints its result. */
export async function serveJob<J, R>(meta: ImportMeta, run: (job: J) => Promise<R>): Promise<void> {
  if (process.argv[1] !== meta.filename || !process.argv[2]) return;
  process.stdout.write(JSON.stringify(await run(JSON.parse(process.argv[2]) as J)) + '\n');
  process.exit(0);
}
