// A plain HTTP server in its own process for the ledger's upstream stages, so its CPU is not this
// process's: `/` answers "ok"; `/chunks?n=N` streams N Chat Completions chunks, one per event-loop turn
// (so most reach the client as a socket read of their own), then `[DONE]`; `/chunks?n=N&rate=R` paces
// them at R per second instead, as the bench's simulator does (many such streams at once are the
// service's delta load).
import http from 'node:http';

export const CHUNK = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764069999,"model":"m","choices":[{"index":0,"delta":{"content":"1764069999123.456|"},"finish_reason":null}]}\n\n';

if (process.argv[1] === import.meta.filename) {
  const server = http.createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    const n = Number(query.get('n') ?? 0);
    const gapMs = query.has('rate') ? 1000 / Number(query.get('rate')) : 1;
    req.resume();
    if (!n) return void res.end('ok');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (i++ < n) {
        res.write(CHUNK);
        setTimeout(next, gapMs);
      } else res.end('data: [DONE]\n\n');
    };
    next();
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as { port: number }).port })));
}
