// Draws docs/trace-waterfall.svg, the picture of one run's trace in docs/operations.md, from the spans an
// in-process OTLP/HTTP receiver got: the service (the simulator, the embedded PGlite, two actor threads)
// answers one streamed chat with a web_search round, held by the simulator after its second delta while
// a second request attaches to the run; the two traces (the run's, and the attach's with its link to the
// run) are drawn together. Run: node --import tsx bench/waterfall/main.ts [out.svg]
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { startOtlpReceiver, traceTo, type ReceivedSpan } from '../../test/helpers/otlp-receiver.ts';
import { sim, startTestServer, waitFor } from '../../test/helpers/server.ts';
import { gateName } from '../../test/helpers/wait.ts';
import { waterfallSvg, type WaterfallSpan } from './render.ts';

const OUT = process.argv[2] ?? path.resolve(import.meta.dirname, '../../docs/trace-waterfall.svg');

/** What the picture says after a span's name: which run, round, tool or statement it is. */
function note(s: ReceivedSpan): string | undefined {
  const a = s.attributes;
  if (a['run.kind'] !== undefined) return 'the run';
  if (a['gen_ai.round'] !== undefined) return `provider call, round ${a['gen_ai.round']}: ${String(a['gen_ai.response.finish_reasons'] ?? '')}`;
  if (a['db.operation.name'] !== undefined) return 'statement';
  if (a['http.response.status_code'] !== undefined) return `${a['http.response.status_code']}`;
  return undefined;
}

const drawn = (s: ReceivedSpan): WaterfallSpan => ({ ...s, note: note(s) });

async function main(): Promise<void> {
  const receiver = await startOtlpReceiver();
  traceTo(receiver);
  const t = await startTestServer({ actorThreads: 2, db: 'embedded' });
  try {
    const gate = gateName();
    const content = sim({ tools: [{ name: 'web_search', args: { query: 'tide pools' } }], reply: 'Tide pools hold anemones, crabs and sea stars.', deltas: 8, gate, gateAfter: 2 }, 'What lives in tide pools?');
    let chatId: string | undefined;
    const first = t.stream('/v1/chat-completions/stream', { provider: 'provider_c', model: 'm', enabledTools: ['web_search'], messages: [{ role: 'user', content }] }, {
      stopAfter: (e) => ((chatId ??= e.event === 'meta' ? e.data.chatId : undefined), false),
    });
    await waitFor(() => chatId !== undefined, 10_000, "the stream's meta");
    const attach = await t.stream(`/v1/chats/${chatId}/stream/attach`, undefined, { stopAfter: (e) => (e.event === 'meta' && t.sim.openGate(gate), false) });
    const run = await first;
    if (run.events.at(-1)?.event !== 'done' || attach.events.at(-1)?.event !== 'done') throw new Error(`a stream did not end in done: ${JSON.stringify([run.events.at(-1), attach.events.at(-1)])}`);
    const traces = [run.headers.get('x-trace-id'), attach.headers.get('x-trace-id')];
    const spans = () => receiver.spans.filter((s) => traces.includes(s.traceId));
    // The run's span ends with the run, after both requests' spans.
    await waitFor(() => spans().some((s) => s.attributes['run.kind'] === 'chat') && spans().some((s) => s.name.includes('attach')), 10_000, 'the run and the attach');
    const svg = waterfallSvg(spans().map(drawn), 'One streamed chat with a web_search round, and an attach to its run (spans as an OTLP receiver got them)');
    writeFileSync(OUT, svg);
    console.log(`wrote ${OUT}: ${spans().length} spans`);
  } finally {
    await t.close();
    await receiver.close();
  }
}

await main();
