// An in-process OTLP/HTTP receiver for trace tests: a node:http server taking what the service's
// exporter posts to /v1/traces (OTLP JSON: resourceSpans → scopeSpans → spans) and keeping each span
// flattened, with its resource's service name and its attributes as plain values.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  events: { name: string; attributes: Record<string, unknown> }[];
  service: string;
  /** The resource's `thread.name` (`main`, `actor N`: src/telemetry/resource.ts). */
  thread: string;
  /** Start and end, in ms since the epoch (fractional: the nanoseconds kept to the µs). */
  startMs: number;
  endMs: number;
}

export interface ReceivedPoint {
  name: string;
  unit: string;
  attributes: Record<string, unknown>;
  count: number;
  sum: number;
}

export interface OtlpReceiver {
  /** The base URL to set as OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** How many spans were posted (with `keep: false`, the only record of them). */
  count(): number;
  /** Every request body as received (to check what was never sent). */
  raw: string[];
  /** The histograms posted to /v1/metrics: each data point with its metric's name and unit. */
  points: ReceivedPoint[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };

function plain(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue !== undefined) return (v.arrayValue.values ?? []).map(plain);
  return undefined;
}

const attrs = (list: KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

const ms = (unixNano: string | number | undefined): number => (unixNano === undefined ? 0 : Number(BigInt(unixNano) / 1000n) / 1000);

/**
 * `keep: false` (a bench's receiver, taking thousands of spans a second): spans are counted, neither
 * kept nor their bodies; metrics are answered and dropped.
 */
export async function startOtlpReceiver(o: { keep?: boolean } = {}): Promise<OtlpReceiver> {
  const keep = o.keep !== false;
  let received = 0;
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const points: ReceivedPoint[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (!String(req.headers['content-type']).includes('json')) {
        res.writeHead(415).end();
        return;
      }
      if (req.url === '/v1/metrics' && !keep) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      if (req.url === '/v1/metrics') {
        const doc = JSON.parse(body) as { resourceMetrics?: any[] };
        for (const rm of doc.resourceMetrics ?? []) {
          for (const sm of rm.scopeMetrics ?? []) {
            for (const m of sm.metrics ?? []) {
              for (const p of m.histogram?.dataPoints ?? []) {
                points.push({ name: m.name, unit: m.unit, attributes: attrs(p.attributes), count: Number(p.count), sum: Number(p.sum) });
              }
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      if (req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      if (keep) raw.push(body);
      const doc = JSON.parse(body) as { resourceSpans?: any[] };
      for (const rs of doc.resourceSpans ?? []) {
        const resource = attrs(rs.resource?.attributes);
        const service = String(resource['service.name'] ?? '');
        const thread = String(resource['thread.name'] ?? '');
        for (const ss of rs.scopeSpans ?? []) {
          received += ss.spans?.length ?? 0;
          for (const s of keep ? ss.spans ?? [] : []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId ?? '',
              name: s.name,
              kind: s.kind,
              attributes: attrs(s.attributes),
              links: (s.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId, attributes: attrs(l.attributes) })),
              status: s.status ?? {},
              events: (s.events ?? []).map((e: any) => ({ name: e.name, attributes: attrs(e.attributes) })),
              service,
              thread,
              startMs: ms(s.startTimeUnixNano),
              endMs: ms(s.endTimeUnixNano),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    count: () => received,
    raw,
    points,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/**
 * The environment that sends this process's traces to `receiver` (set before the server starts: the
 * SDK and the actor threads read process.env): batches leave within 50 ms, so tests wait on spans, not time.
 */
export function traceTo(receiver: OtlpReceiver, extra: Record<string, string> = {}): void {
  Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_METRIC_EXPORT_INTERVAL: '200', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', ...extra });
}
