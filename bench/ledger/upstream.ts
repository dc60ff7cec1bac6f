// A plain HTTP server in its own process for the ledger's upstream stages, so its CPU is not this
// process's: `/` answers "ok"; `/chunks?n=N` streams N Chat Completions chunks, one per event-loop turn
// (so most reach the client as a socket read of their own), then `[DONE]`.
import http from 'node:http';

export const CHUNK = 'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764069999,"model":"m","choices":[{"index":0,"delta":{"content":"1764069999123.456|"},"finish_reason":null}]}\n\n';

if (process.argv[1] === import.meta.filename) {
  const server = http.createServer((req, res) => {
    const n = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('n') ?? 0);
    req.resume();
    if (!n) return void res.end('ok');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    let i = 0;
    const next = () => {
      if (i++ < n) {
        res.write(CHUNK);
        setTimeout(next, 1);
      } else res.end('data: [DONE]\n\n');
    };
    next();
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: (server.address() as { port: number }).port })));
}
