// Takeover (docs/operations.md, "Answers that outlive their instance"): a run the sweeper handed to this
// instance (store/takeover.ts: its new LlmCall already running here, its fencing token taken) is
// started through the normal registry under its chat's key, so it holds the chat's cluster lease (a
// second start gets 409, attach works from any instance). Its request resumes from the lost run's
// checkpointed text: the chat run emits that text as its first delta and sends it to the provider as
// the trailing assistant turn, which the Messages API continues (actors/chat-run.ts).
//
// The dead instance's lease may outlive the sweep by up to a lease TTL: until it expires the start is
// refused as busy and is tried again. A start that never happens ends the run as any lost run ends.
import type { Logger } from 'pino';
import { ADMIN_USER_ID } from '../base/types.ts';
import type { ChatRunRequest, ChatRunValue } from '../../actors/chat-run.ts';
import type { RunResult } from '../../actors/runtime/protocol.ts';
import type { Attachment, Message, ProviderName } from '../base/types.ts';
import type { Runs } from './runs.ts';
import type { InputMessage } from '../domain/schemas.ts';
import { getChatDetail } from '../store/chats.ts';
import type { Queryable } from '../db/types.ts';
import { endAsInterrupted, type RecoveredRuns, type TakeoverPolicy } from '../store/recovery.ts';
import type { ContinuedRun } from '../store/takeover.ts';

/**
 * Providers whose API continues a trailing assistant turn. provider_a's Responses API and the Chat
 * Completions providers start a new turn instead: their lost runs end as interrupted text.
 */
const CONTINUABLE: ReadonlySet<ProviderName> = new Set(['provider_b']);

/**
 * A continuation is an answer its user already started (and paid for): it is never refused for their
 * limit of active runs, but it takes one of their slots, so that their new starts are refused while it
 * runs, as they would be had the run never moved. A limit no count reaches counts without refusing.
 */
const counted = (owner: string): { ownerLimit?: number } => (owner === ADMIN_USER_ID ? {} : { ownerLimit: Number.MAX_SAFE_INTEGER });

/** Between two tries of a start refused because the dead instance's lease is still there. */
const RETRY_MS = 200;

const isContinuable = (p: string): p is ProviderName => CONTINUABLE.has(p as ProviderName);

/** The stored transcript as a client would send it: tool logs are the service's own, not the model's turns. */
function transcript(messages: Message[]): InputMessage[] {
  return messages
    .filter((m) => !(m.role === 'tool' && m.metadata?.kind === 'tool_call'))
    .map((m) => {
      const attachments = m.metadata?.attachments as Attachment[] | undefined;
      return { role: m.role, content: m.content, name: m.name, ...(attachments && { attachments }) };
    });
}

export interface TakeoverOptions {
  pool: Queryable;
  runs: Runs;
  instanceId: string;
  /** The cluster's lease TTL: the longest a dead instance's lease can keep the chat. */
  leaseTtlMs: number;
  log: Logger;
  /** The server's tally of recovered runs (its metrics read it). */
  recovered: RecoveredRuns;
  /**
   * Records the continuation's outcome where the lost start left a place for it: its Idempotency-Key, its
   * OpenAI response (src/openai/run-ends.ts), if it had them.
   */
  recordOutcome(run: ContinuedRun, result: RunResult<ChatRunValue>): Promise<void>;
}

export class Takeovers {
  constructor(private readonly o: TakeoverOptions) {}

  /** What the sweeper continues, and how. */
  policy(): TakeoverPolicy {
    return { instanceId: this.o.instanceId, providers: CONTINUABLE, start: (run) => void this.start(run) };
  }

  private async start(run: ContinuedRun): Promise<void> {
    const { log } = this.o;
    try {
      if (await this.continueRun(run)) {
        this.o.recovered.continued++;
        log.warn({ chatId: run.chatId, lostCallId: run.callId, callId: run.newCallId }, 'continuing the run of a stopped instance');
        return;
      }
    } catch (err) {
      log.warn({ err, chatId: run.chatId }, 'the continuation of a stopped instance’s run could not start');
    }
    await endAsInterrupted(this.o.pool, run, this.o.recovered).catch((err: unknown) =>
      log.error({ err, chatId: run.chatId }, 'the text of a stopped instance’s run could not be stored'),
    );
  }

  /** True once the continuation runs here; false when its chat is gone or its lease never came free. */
  private async continueRun(run: ContinuedRun): Promise<boolean> {
    const { runs, pool } = this.o;
    const chat = await getChatDetail(pool, run.chatId, run.owner);
    if (!chat || !isContinuable(run.provider)) return false;
    const request: ChatRunRequest = {
      mode: 'stream',
      chatId: run.chatId,
      createChat: false,
      storeChat: true,
      callId: run.newCallId,
      provider: run.provider,
      model: run.model,
      messages: transcript(chat.messages),
      stored: { additionalSystemPrompt: chat.additionalSystemPrompt, enabledTools: chat.enabledTools },
      owner: run.owner,
      resume: { text: run.text, runToken: run.runToken, deltas: run.deltas },
      // The lost run's readers numbered its deltas (the OpenAI-compatible API): so do the continuation's.
      keepDeltas: run.deltas !== null,
      // Tracing: the continuation's run span links to the lost run's.
      ...(run.trace !== null && { continues: run.trace }),
    };
    const until = performance.now() + this.o.leaseTtlMs + RETRY_MS;
    for (;;) {
      const started = await runs.start({ kind: 'chat', key: run.chatId, request, ifRunning: 'reject', label: run.provider, owner: run.owner, ...counted(run.owner) });
      if (started.ok) {
        void started.handle.result.then((r) =>
          this.o.recordOutcome(run, r).catch((err: unknown) => this.o.log.error({ err, chatId: run.chatId }, 'the outcome of a continued run could not be recorded')),
        );
        return true;
      }
      if (started.outcome !== 'busy' || performance.now() > until) return false;
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}
