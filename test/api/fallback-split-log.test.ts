// A run that fell back stores its answer, then splits its LlmCall into one per model called
// (store/fallback-calls.ts). When that split fails for good (here a trigger refuses it: a permanent
// error, not an outage that the write would wait out), the answer stands and the run logs a warning
// with its ids, instead of dropping the failure unseen. Decided by the log line and the stored rows.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { createLogger } from '../../src/base/log.ts';
import { NEEDS_POSTGRES, sim, startTestServer, type TestServer } from '../helpers/server.ts';

type Line = Record<string, unknown> & { msg: string };

/** The service's warn lines, as they are written (pino writes to the stream at once). */
function logLines() {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { log: createLogger('warn', stream), lines };
}

describe('a fallback split that cannot be written', { skip: NEEDS_POSTGRES }, () => {
  let t: TestServer;
  const logs = logLines();
  before(async () => {
    t = await startTestServer({ db: 'postgres', log: logs.log, env: { PROVIDER_FALLBACKS: 'provider_a=provider_c/sim-c-large' } });
    // This scratch database refuses the split's new calls (continues_call_id names the first).
    await t.server.ctx.pool.query(`CREATE FUNCTION refuse_split() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'the test refuses the split'; END $$;
      CREATE TRIGGER refuse_split BEFORE INSERT ON llm_calls FOR EACH ROW WHEN (NEW.continues_call_id IS NOT NULL) EXECUTE FUNCTION refuse_split()`);
  });
  after(() => t.close());

  it('is logged as a warning naming the run, its LlmCall and its chat; the answer stands', async () => {
    const content = sim({ status: 503, failOn: ['provider_a'], reply: 'answered by c' });
    const s = await t.stream('/v1/chat-completions/stream', { provider: 'provider_a', model: 'sim-a-large', enabledTools: [], messages: [{ role: 'user', content }] });
    assert.equal(s.events.at(-1)!.event, 'done', JSON.stringify(s.events.at(-1)));
    const chatId = s.events[0]!.data.chatId as string;
    // The run logs before it ends: by its `done` the line is written.
    const line = logs.lines.find((l) => l.msg.includes('fallback calls'));
    assert.ok(line, `no such line in ${JSON.stringify(logs.lines)}`);
    const { rows } = await t.server.ctx.pool.query<{ id: string; provider: string; status: string }>('SELECT id, provider, status FROM llm_calls WHERE chat_id = $1', [chatId]);
    // Not split: one LlmCall, the first model's, ended with the answer.
    assert.deepEqual(rows.map((r) => [r.provider, r.status]), [['provider_a', 'succeeded']]);
    assert.equal(line.level, 40);
    assert.equal(typeof line.runId, 'string');
    assert.match(line.msg, new RegExp(`^run ${line.runId}: the fallback calls of LlmCall ${rows[0]!.id} \\(chat ${chatId}\\) could not be written`));
    assert.match(String(line.err), /the test refuses the split/);
    const chat = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
    assert.equal(chat.messages.at(-1).content, 'answered by c');
  });
});
