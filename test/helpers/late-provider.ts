// A provider_a (the Responses API, wire-formats.md §1) that answers as the real one does, under the
// test's control instead of a clock. A non-streaming call gets nothing, not even its status line, until
// the test answers it, and is answered then even when the service has hung up on it meanwhile (a stop):
// the late answer goes out on whatever the connection has become. A streaming call sends its deltas
// when the test says. HTTP/1.1 (node:http), or HTTP/2 with prior knowledge (h2c, PROVIDER_H2C_ORIGINS).
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import http2, { type Http2ServerRequest, type Http2ServerResponse, type Http2Session } from 'node:http2';

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;
/** The write both response kinds have (their overloads differ, so the union's is not callable). */
const write = (res: Res, chunk: string) => (res as { write(chunk: string): boolean }).write(chunk);

export interface LateProvider {
  /** PROVIDER_A_BASE_URL. */
  url: string;
  /** Non-streaming calls received. */
  readonly wholeCalls: number;
  /** Of those, the ones the service hung up on before their answer. */
  readonly wholeAbandoned: number;
  /** Streaming calls received. */
  readonly streamCalls: number;
  /** Answers every held non-streaming call now (late, when the service has already let it go). */
  answerWhole(text?: string): void;
  /** One `response.output_text.delta` per text, to every open stream. */
  sendDeltas(texts: string[]): void;
  /** Completes every open stream. */
  finishStreams(): void;
  close(): Promise<void>;
}

const usage = (output: number) => ({ input_tokens: 1, input_tokens_details: { cached_tokens: 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 1 + output });
const message = (text: string, status: string) => ({ id: 'msg_1', type: 'message', status, role: 'assistant', content: status === 'completed' ? [{ type: 'output_text', text, annotations: [] }] : [] });

interface OpenStream {
  res: Res;
  seq: number;
  text: string;
}

export async function startLateProvider(opts: { h2c?: boolean } = {}): Promise<LateProvider> {
  const held: Res[] = [];
  const streams: OpenStream[] = [];
  const counts = { wholeCalls: 0, wholeAbandoned: 0, streamCalls: 0 };

  const event = (s: OpenStream, data: Record<string, unknown>) => write(s.res, `event: ${data.type}\ndata: ${JSON.stringify({ ...data, sequence_number: s.seq++ })}\n\n`);

  const handle = (req: Req, res: Res, raw: string) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ object: 'list', data: [{ id: 'm', object: 'model', created: 1, owned_by: 'test' }] }));
      return;
    }
    if (!JSON.parse(raw).stream) {
      counts.wholeCalls++;
      held.push(res);
      // The service hung up before the answer: its HTTP/1.1 connection or its HTTP/2 stream closed.
      const closing = 'stream' in res ? res.stream : res;
      closing.once('close', () => {
        if (held.includes(res)) counts.wholeAbandoned++;
      });
      return;
    }
    counts.streamCalls++;
    const s: OpenStream = { res, seq: 0, text: '' };
    streams.push(s);
    res.once('close', () => streams.splice(streams.indexOf(s), 1));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const response = { id: 'resp_s', object: 'response', status: 'in_progress', output: [], usage: null, model: 'm' };
    event(s, { type: 'response.created', response });
    event(s, { type: 'response.in_progress', response });
    event(s, { type: 'response.output_item.added', output_index: 0, item: message('', 'in_progress') });
    event(s, { type: 'response.content_part.added', item_id: 'msg_1', output_index: 0, content_index: 0, part: { type: 'output_text', annotations: [], text: '' } });
  };

  const onRequest = (req: Req, res: Res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (raw += chunk));
    req.on('end', () => handle(req, res, raw));
  };
  const server = opts.h2c ? http2.createServer(onRequest) : http.createServer(onRequest);
  const sessions = new Set<Http2Session>();
  server.on('session', (s: Http2Session) => {
    sessions.add(s);
    s.once('close', () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };

  return {
    url: `http://127.0.0.1:${port}/v1`,
    get wholeCalls() {
      return counts.wholeCalls;
    },
    get wholeAbandoned() {
      return counts.wholeAbandoned;
    },
    get streamCalls() {
      return counts.streamCalls;
    },
    answerWhole(text = 'the late answer') {
      for (const res of held.splice(0)) {
        // As the real provider does: it answers the call it was given, hung up on or not. Writing to a
        // stream the client has reset may throw on HTTP/2; the answer is then simply lost, as it is there.
        try {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ id: 'resp_w', object: 'response', created_at: 1, status: 'completed', error: null, incomplete_details: null, model: 'm', output: [message(text, 'completed')], usage: usage(3) }));
        } catch {
          // the stream is gone
        }
      }
    },
    sendDeltas(texts) {
      for (const s of streams) {
        for (const delta of texts) {
          s.text += delta;
          event(s, { type: 'response.output_text.delta', item_id: 'msg_1', output_index: 0, content_index: 0, delta });
        }
      }
    },
    finishStreams() {
      for (const s of streams.slice()) {
        const item = message(s.text, 'completed');
        event(s, { type: 'response.output_text.done', item_id: 'msg_1', output_index: 0, content_index: 0, text: s.text });
        event(s, { type: 'response.content_part.done', item_id: 'msg_1', output_index: 0, content_index: 0, part: item.content[0] });
        event(s, { type: 'response.output_item.done', output_index: 0, item });
        event(s, { type: 'response.completed', response: { id: 'resp_s', object: 'response', status: 'completed', model: 'm', output: [item], usage: usage(2) } });
        s.res.end();
      }
    },
    close() {
      for (const s of sessions) s.destroy();
      if (server instanceof http.Server) server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
