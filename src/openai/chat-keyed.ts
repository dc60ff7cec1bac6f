// Idempotency-Key on POST /openai/v1/chat/completions (as on the spec's completions): the first request claims
// the key and records its answer, the chat.completion (or the error envelope), when its run ends; a retry with
// the same key and body starts nothing: a whole one gets that answer once there is one, a streamed one follows
// the run while it goes (a stored exchange: by its chat) and else gets the answer as chunks.
import { deltaFrame, sseFrame } from '../../actors/runtime/frame.ts';
import type { ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { AppContext } from '../service/context.ts';
import { REPLAYED_HEADERS } from '../http/idempotency.ts';
import { outcomeError } from '../http/outcomes.ts';
import type { Reply } from '../http/reply.ts';
import { nextRecord, recordedWhole, recordOutcome, type KeyedRequest, type WholeOutcome } from '../service/idempotent-start.ts';
import type { ToolCallRequest } from '../providers/types.ts';
import type { IdempotencyRecord } from '../store/idempotency.ts';
import type { Subscriber } from '../../actors/runtime/subscriber.ts';
import { openaiErrorShape } from './errors.ts';

/** The retry's chunk stream (chat-completions.ts, ChatChunkStream): the run's frames as chunks on its SSE answer. */
interface ChunkStream extends Subscriber {
  open(): void;
}

interface Completion {
  choices: Array<{ message: { content: string | null; tool_calls?: Array<{ id: string; function: { name: string; arguments: string } }> } }>;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/** Records the run's answer on its key, as the first request answered it. */
export function recordChatKey(app: AppContext, keyed: KeyedRequest | null, result: Promise<RunResult<ChatRunValue>>, render: (v: ChatRunValue) => unknown): void {
  if (!keyed) return;
  recordOutcome(app, keyed, result, (r): WholeOutcome => {
    if (r.ok) return { status: 200, body: render(r.value) };
    const err = outcomeError(r);
    return { status: err.status, body: openaiErrorShape(err).body };
  });
}

/** A retry: the first request's answer, whole, or as chunks on `chunks` (made on demand: a refusal answers with its status). */
export async function replayChat(app: AppContext, record: IdempotencyRecord, reply: Reply, owner: string, chunksOn: (() => ChunkStream) | null): Promise<void> {
  const gone = new AbortController();
  reply.onAbort(() => gone.abort());
  let stream: ChunkStream | null = null;
  // A streamed retry's answer is a replay whichever way it goes (its head may leave with the attach's first frames).
  if (chunksOn) reply.shared = [...(reply.shared ?? []), 'idempotent-replayed', 'true'];
  for (;;) {
    const out = recordedWhole(record);
    if (out && chunksOn === null) return reply.json(out.status, out.body, REPLAYED_HEADERS);
    if (out && out.status !== 200) return reply.json(out.status, out.body);
    if (out) return replayAsChunks((stream ??= chunksOn!()), out.body as Completion);
    if (chunksOn && record.chatId) {
      stream ??= chunksOn();
      if ((await app.runs.attach('chat', record.chatId, stream)) !== 'not_found') return stream.open();
    }
    const next = await nextRecord(app, { key: record.key, owner }, gone.signal);
    if (!next) return;
    record = next;
  }
}

/** The recorded answer as the run's own frames would have made it: the role, the text, the calls, the end. */
function replayAsChunks(stream: ChunkStream, c: Completion): void {
  const message = c.choices[0]!.message;
  const toolCalls: ToolCallRequest[] | undefined = message.tool_calls?.map((t) => ({ callId: t.id, name: t.function.name, arguments: t.function.arguments }));
  const usage = { inputTokens: c.usage.prompt_tokens, outputTokens: c.usage.completion_tokens, totalTokens: c.usage.total_tokens };
  const text = message.content ?? '';
  stream.write(sseFrame('meta', { type: 'meta' }) + (text ? deltaFrame(text) : '') + sseFrame('done', { type: 'done', text, usage, ...(toolCalls && { toolCalls }) }));
  stream.end();
}
