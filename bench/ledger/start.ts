// The ledger of one persisted start, stage by stage, each measured alone (bench/ledger/ledger.ts runs it).
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import OpenAI from 'openai';
import { openDatabase } from '../../src/db/pool.ts';
import { createProviderFetch } from '../../src/providers/http-fetch.ts';
import { toProviderMessages } from '../../src/chat/transcript.ts';
import { createChat } from '../../src/store/chats.ts';
import { finishLlmCallWithMessage } from '../../src/store/llm-calls.ts';
import { cpuMicros, start, type Child } from '../../test/helpers/procs.ts';
import { serviceBody } from '../load/bodies.ts';
import { pgCpuMeter } from '../load/pg-cpu.ts';
import { createBenchDb } from '../load/targets.ts';
import { actorStart } from './actor.ts';
import { startCrossings } from './crossing.ts';
import { startSseServer } from './sse-server.ts';
import { STREAM_PATH, startRouteServer } from './route.ts';
import { chatRequest, providerC } from './run-shapes.ts';
import { simBase } from './upstream.ts';
import { minus, sum, time, type Stage } from './timing.ts';
import { ADMIN_USER_ID } from '../../src/base/types.ts';

const N = Number(process.env.LEDGER_OPS ?? 2000);

/** CPU of a child process around a round, as `time`'s "other process" reading. */
export const childCpu = (child: Child) => async () => {
  const c0 = cpuMicros(child.pid);
  return async () => cpuMicros(child.pid) - c0;
};

export async function startUpstream(): Promise<{ child: Child; port: number }> {
  const { child, line } = await start('ledger-upstream', process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'upstream.ts')], { ready: (l) => l.startsWith('{') });
  return { child, port: JSON.parse(line).port };
}

export async function startSseClient(port: number): Promise<{ child: Child; run(path: string, requests: number, connections: number, body?: string, close?: boolean): Promise<void> }> {
  const waiting: Array<() => void> = [];
  const { child } = await start('ledger-sse-client', process.execPath, ['--import', 'tsx', path.join(import.meta.dirname, 'sse-client.ts'), String(port)], {
    stdin: true,
    onLine: (l) => void (l.startsWith('{"done"') && waiting.shift()?.()),
  });
  return {
    child,
    run: (p, requests, connections, body, close) => new Promise<void>((resolve) => {
      waiting.push(resolve);
      child.proc.stdin!.write(JSON.stringify({ path: p, requests, connections, body, close }) + '\n');
    }),
  };
}

async function databaseStages(): Promise<Stage[]> {
  const scratch = await createBenchDb();
  if (!scratch.url) return [{ name: 'database statements', cpuUs: 0, wallUs: 0, note: 'not measured: no Postgres at 127.0.0.1:5432' }];
  const db = await openDatabase({ DATABASE_URL: scratch.url, DATA_DIR: '/nonexistent' }, { poolMax: 1 });
  const meter = await pgCpuMeter(scratch.url);
  const pgCpu = async () => (await meter.start()).stop;
  try {
    const made: Array<{ chatId: string; callId: string }> = [];
    const newChat = async () => {
      const chatId = randomUUID();
      const callId = randomUUID();
      await createChat(db.pool, { owner: ADMIN_USER_ID, id: chatId, provider: 'provider_c', model: 'm', enabledTools: [], messages: [{ role: 'user', content: 'load 1\nSIM {"deltas":1}' }], call: { id: callId, instanceId: null } });
      made.push({ chatId, callId });
    };
    const note = 'one statement on one pooled connection (named), one every 2 ms; other = its Postgres backend';
    const create = await time('db: createChat with its input and LlmCall', newChat, { ops: N, paced: true }, pgCpu);
    const finish = await time('db: finishLlmCallWithMessage', () => {
      const { chatId, callId } = made.pop()!;
      return finishLlmCallWithMessage(db.pool, { callId, chatId, assistant: { content: '1764069999123.456|' }, usage: { inputTokens: 3, outputTokens: 1, totalTokens: 4 }, latencyMs: 5 });
    }, { ops: Math.floor((made.length - 10) / 5), warm: 10, rounds: 5, paced: true }, pgCpu);
    return [{ ...create, note }, { ...finish, note }];
  } finally {
    await meter.close();
    await db.close();
    await scratch.drop();
  }
}

async function upstreamStages(): Promise<Stage[]> {
  const up = await startUpstream();
  const url = `http://127.0.0.1:${up.port}/`;
  try {
    // The SDK's own work: a fetch that answers at once, so what is left is building and sending the request.
    const canned = async () => new Response('data: [DONE]\n\n', { status: 200, headers: { 'content-type': 'text/event-stream' } });
    const client = new OpenAI({ apiKey: 'k', baseURL: url, organization: null, project: null, maxRetries: 2, timeout: 120_000, fetch: canned });
    const messages = [{ role: 'user' as const, content: 'load 1\nSIM {"deltas":1}' }];
    const sdk = await time('openai SDK: build and send the request (fetch answers at once)', () =>
      client.chat.completions.create({ model: 'm', messages, stream: true, stream_options: { include_usage: true } }, { signal: new AbortController().signal }).asResponse(), { ops: N, paced: true });
    const cannedOnly = await time('(the canned fetch alone, subtracted above)', () => canned(), { ops: N, paced: true });
    const pf = createProviderFetch({ timeoutMs: 120_000 });
    const viaFetch = await time('provider fetch (http-fetch.ts) POST, reused connection', async () => {
      const r = await pf(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m"}' });
      await r.text();
    }, { ops: N, paced: true }, childCpu(up.child));
    const round = await adapterRound(up);
    return [
      { ...round, note: `${round.note}; its parts measured alone are the next two rows (out of the sum)` },
      { ...minus(sdk, cannedOnly), inSum: false, note: `minus the canned Response (${cannedOnly.cpuUs.toFixed(1)} µs)` },
      { ...viaFetch, inSum: false, note: 'the service\'s fetch under the SDK: undici\'s dispatch, the PushBody, the Response shim' },
    ];
  } finally {
    await up.child.stop();
  }
}

/**
 * The provider's side of a start, whole, as the actor thread runs it: the service's provider_c adapter
 * (createProviders: the openai client on the service's fetch) starts a session for the bench's request
 * and runs its streamed round against the ledger's upstream answering as the simulator does (a role
 * chunk, one text chunk, the finish and usage chunks): the request's parameters, the SDK, undici's
 * dispatch and the connection reused, the PushBody, eachFrame and SseFrames, the chunks' JSON and the
 * adapter's reading of them. Paced as the bench starts streams; other = the upstream server.
 */
async function adapterRound(up: { child: Child; port: number }): Promise<Stage> {
  const adapter = providerC(simBase(up.port, 1));
  const req = chatRequest(true);
  let texts = 0;
  const onText = () => void texts++;
  const s = await time('provider_c adapter: a streamed round of one delta', async () => {
    const session = adapter.startSession({ model: req.model, messages: toProviderMessages(null, req.messages), tools: [], stream: true, signal: new AbortController().signal });
    const end = await session.round(null, onText);
    if (end.finishReason !== 'stop') throw new Error(`the ledger's round ended with ${end.finishReason}`);
  }, { ops: N, paced: true }, childCpu(up.child));
  if (texts === 0) throw new Error('the adapter\'s rounds handed no text');
  return { ...s, note: 'src/providers/chat-completions.ts on src/providers/http-fetch.ts, the upstream as the simulator answers; other = the upstream server' };
}

/**
 * Answers from a uWS server in this process to the ledger's client process, paced as the bench's
 * generator starts streams (one every 2 ms, each request on a connection of its own): `answer` is one
 * request's stage, less what asking the client process for it costs here (a stdin line out and a
 * stdout line back, measured with no request). Other = the client process.
 */
async function withPacedClient<T>(port: number, fn: (answer: (path: string, body?: string) => Promise<Stage>) => Promise<T>): Promise<T> {
  const client = await startSseClient(port);
  try {
    const ops = { ops: Math.min(N, 500), paced: true };
    const ipc = await time('asking the client process (no request)', () => client.run('/', 0, 0), ops, childCpu(client.child));
    return await fn(async (path, body) => minus(await time(`answer ${path}`, () => client.run(path, 1, 1, body, true), ops, childCpu(client.child)), ipc));
  } finally {
    await client.child.stop();
  }
}

/** The client side of a start as the ledger's uWS answers it (sse-server.ts): the connection and the writes. */
async function sseStage(): Promise<Stage> {
  const server = await startSseServer();
  try {
    const sep = await withPacedClient(server.port, (answer) => answer('/separate'));
    return { ...sep, name: 'client connection and SSE response of a start: accept, the request, status+headers+meta, delta, done, end (4 socket writes), the close', note: 'a GET on a connection of its own (`connection: close`), as the bench\'s generator opens one per stream; other = the client process' };
  } finally {
    server.close();
  }
}

/**
 * The main thread's part of a start, whole (route.ts): the service's router, completion route and SSE
 * sink over a real Supervisor answering at once, one POST on a connection of its own every 2 ms.
 */
async function mainThreadStage(body: string): Promise<Stage> {
  const server = await startRouteServer();
  try {
    return await withPacedClient(server.port, (answer) => answer(STREAM_PATH, body));
  } finally {
    server.close();
  }
}

export async function startLedger(): Promise<Stage[]> {
  const body = serviceBody('provider_c', true, 1, 1).replace('__I__', '1');
  const main = await mainThreadStage(body);
  // The main thread's stage holds the SSE answer; it stays in the table, out of the sum, to show its part.
  const sse = await sseStage();
  return [
    {
      ...main,
      name: 'main thread: the request through the service\'s router and completion route, the supervisor, the SSE sink\'s head, frames and end, on a connection of its own',
      note: `src/routes/completions.ts and src/http/ over a real Supervisor whose host answers at once (route.ts); the connection and SSE answer measured alone is the next row, `
        + `and what it leaves (${(main.cpuUs - sse.cpuUs).toFixed(0)} µs) is the router's, the route's, the supervisor's and the sink's own work; other = the client process`,
    },
    { ...sse, inSum: false },
    ...(await databaseStages()),
    ...(await upstreamStages()),
    await startCrossings(),
    await actorStart(true, N),
  ];
}
