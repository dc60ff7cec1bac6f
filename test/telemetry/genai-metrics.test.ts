// The GenAI client metrics on /metrics (docs/operations.md, "Traces and GenAI metrics"): each provider
// call's duration, time to first token and token usage under the semantic conventions' Prometheus
// names, observed in the actor thread that made the call. And tracing off sends no trace header.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { sim, startTestServer, type TestServer, waitFor } from '../helpers/server.ts';

for (const actorThreads of [0, 2]) {
  describe(`GenAI metrics (ACTOR_THREADS=${actorThreads})`, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer({ actorThreads });
    });
    after(() => t.close());

    const metric = async (line: RegExp): Promise<number | null> => {
      const text = (await t.call('GET', '/metrics')).body as string;
      const m = line.exec(text);
      return m ? Number(m[1]) : null;
    };
    const labels = 'gen_ai_operation_name="chat",gen_ai_provider_name="provider_b",gen_ai_request_model="sim-b-small"';

    it('a provider call is counted with its duration, its time to first token and its tokens', async () => {
      const body = { provider: 'provider_b', model: 'sim-b-small', messages: [{ role: 'user', content: sim({ reply: 'one two three', deltas: 3, usage: { input: 40, output: 3 } }) }] };
      const r = await t.stream('/v1/chat-completions/stream', body);
      assert.equal(r.events.at(-1)!.event, 'done');
      assert.equal(r.headers.get('x-trace-id'), null, 'tracing is off: no trace id');
      const count = new RegExp(`^gen_ai_client_operation_duration_seconds_count\\{${labels},error_type=""\\} (\\d+)`, 'm');
      await waitFor(async () => (await metric(count)) === 1, 10_000, 'the call on /metrics');
      assert.equal(await metric(new RegExp(`^gen_ai_client_operation_time_to_first_chunk_seconds_count\\{${labels}\\} (\\d+)`, 'm')), 1);
      assert.equal(await metric(new RegExp(`^gen_ai_client_token_usage_sum\\{${labels},gen_ai_token_type="input"\\} (\\d+)`, 'm')), 40);
      assert.equal(await metric(new RegExp(`^gen_ai_client_token_usage_sum\\{${labels},gen_ai_token_type="output"\\} (\\d+)`, 'm')), 3);
    });

    it('a failed call is counted with its error type', async () => {
      const body = { provider: 'provider_b', model: 'sim-b-small', messages: [{ role: 'user', content: sim({ status: 400 }) }] };
      const r = await t.stream('/v1/chat-completions/stream', body);
      assert.equal(r.events.at(-1)!.event, 'error');
      const failed = new RegExp(`^gen_ai_client_operation_duration_seconds_count\\{${labels},error_type="ProviderError"\\} (\\d+)`, 'm');
      await waitFor(async () => (await metric(failed)) === 1, 10_000, 'the failed call on /metrics');
    });
  });
}
