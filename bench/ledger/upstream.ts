// A plain HTTP server in its own process for the ledger's upstream stages, so its CPU is not this
// process's: `/` answers "ok"; `/chunks?n=N` streams N Chat Completions chunks, one per event-loop turn
// (so most reach the client as a socket read of their own), then `[DONE]`; `/chunks?n=N&rate=R` paces
// them at R per second instead, as the bench's simulator does (many such streams at once are the
// service's delta load). `POST <base>/chat/completions` answers as the simulator does a streamed round
// with include_usage (src/sim/chat-completions.ts): the role chunk at once, then N text chunks (one per
// turn, or at R/s), then the finish chunk, the usage chunk and `[DONE]` with the end, where the base
// is `/n/N` or `/n/N/rate/R`: an OpenAI client whose baseURL is that base calls it as a provider.
import http from 'node:http';

export const CHUNK = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764069999,"model":"m","choices":[{"index":0,"delta":{"content":"1764069999123.456|"},"finish_reason":null}]}\n\n';

const HEAD = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764069999,"model":"m","service_tier":"default","system_fingerprint":"fp_sim","choices":';
const simChunk = (delta: unknown, finish: string | null) =>
  `${HEAD}[${JSON.stringify({ index: 0, delta, logprobs: null, finish_reason: finish })}],"usage":null}\n\n`;
const USAGE = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 }, completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0, accepted_prediction_tokens: 0, rejected_prediction_tokens: 0 } };
/** The simulator's streamed round: its first chunk, one text chunk, and its end. */
export const SIM = {
  head: simChunk({ role: 'assistant', content: '', refusal: null }, null),
  delta: simChunk({ content: '1764069999123.456|' }, null),
  tail: `${simChunk({}, 'stop')}${HEAD}[],"usage":${JSON.stringify(USAGE)}}\n\ndata: [DONE]\n\n`,
};

/** The provider base URL whose `/chat/completions` streams `n` text chunks (at `rate` a second, if given). */
export const simBase = (port: number, n: number, rate?: number) => `http://127.0.0.1:${port}/n/${n}${rate ? `/rate/${rate}` : ''}`;

if (process.argv[1] === import.meta.filename) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const sim = /^\/n\/(\d+)(?:\/rate\/(\d+))?\/chat\/completions$/.exec(url.pathname);
    const n = Number(sim ? sim[1] : (url.searchParams.get('n') ?? 0));
    const rate = sim ? sim[2] : url.searchParams.get('rate');
    const gapMs = rate ? 1000 / Number(rate) : 1;
    const [head, chunk, tail] = sim ? [SIM.head, SIM.delta, SIM.tail] : ['', CHUNK, 'data: [DONE]\n\n'];
    req.resume();
    if (!n) return void res.end('ok');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (head) res.write(head);
    let i = 0;
    const next = () => {
      if (i++ < n) {
        res.write(chunk);
        if (!sim || i < n) return void setTimeout(next, gapMs);
      }
      res.end(tail);
    };
    if (sim) setTimeout(next, 0);
    else next();
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as { port: number }).port })));
}
