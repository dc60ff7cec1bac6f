// The HTTP error catalogue and the mapping of lower layers' errors to answers: what a client is told
// when the database or the cluster is out of reach (503, retry) versus a bug (500), and the run
// outcome table, draining and overloaded included. Plus the run result codecs that guard JSON from
// Redis and Postgres.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeRunResult, RunResultDecodeError } from '../../actors/results.ts';
import * as errors from '../../src/http/errors.ts';
import { outcomeError } from '../../src/http/outcomes.ts';
import { toHttpError } from '../../src/http/to-http-error.ts';
import { IdempotencyKeyError } from '../../src/service/idempotent-start.ts';
import { ClusterUnavailableError } from '../../src/service/runs.ts';
import { ErrorCodes, ServiceError } from '../../src/base/errors.ts';
import { ToolError } from '../../src/tools/types.ts';

const entries = Object.entries(errors).filter((e): e is [string, errors.ErrorDef<unknown[]>] => typeof e[1] === 'function' && 'code' in e[1]);

/** toHttpError, and whether it logged the error as unexpected. */
function answer(err: unknown) {
  let logged = false;
  let ref = '';
  const http = toHttpError(err, (_, r) => ((logged = true), (ref = r)));
  return { status: http.status, message: http.message, retryAfter: http.headers?.['retry-after'], code: http.code, logged, ref };
}

describe('the error catalogue', () => {
  it('gives each entry its own code and a status with a status line', () => {
    const distinct = new Map(entries.map(([, def]) => [def, def.code]));
    assert.equal(new Set(distinct.values()).size, distinct.size, 'no code is used twice');
    for (const [name, def] of entries) {
      assert.match(def.code, /^CSS_[A-Z_]+$/, name);
      assert.ok(errors.STATUS_TEXT[def.status], `${name}: ${def.status} has a status line`);
    }
  });

  it('builds the message from its arguments and carries fixed headers', () => {
    const e = errors.PROVIDER_NOT_CONFIGURED('provider_b', 'PROVIDER_B_API_KEY');
    assert.deepEqual([e.status, e.message, e.code], [400, 'provider_b is not configured: set PROVIDER_B_API_KEY', 'CSS_PROVIDER_NOT_CONFIGURED']);
    assert.deepEqual(errors.UNAUTHORIZED().headers, { 'www-authenticate': 'Bearer' });
  });
});

describe('lower layers’ errors as HTTP answers', () => {
  const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED', syscall: 'connect' });

  it('a database out of reach is 503 naming the database, with Retry-After, not logged as a bug', () => {
    const cases: unknown[] = [
      refused,
      new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' }), refused]),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is shutting down'), { code: '57P03' }),
      Object.assign(new Error('connect ENOENT /tmp/x/.s.PGSQL.5432'), { code: 'ENOENT', syscall: 'connect' }),
    ];
    for (const err of cases) {
      const a = answer(err);
      assert.equal(a.status, 503, String(err));
      assert.match(a.message, /^database unavailable: ./);
      assert.match(a.retryAfter ?? '', /^\d+$/);
      assert.equal(a.logged, false);
    }
  });

  it('a statement’s own error or a bug is a logged 500', () => {
    for (const err of [Object.assign(new Error('relation "x" does not exist'), { code: '42P01' }), new TypeError('x is undefined'), Object.assign(new Error('no such file'), { code: 'ENOENT', syscall: 'open' })]) {
      const a = answer(err);
      assert.deepEqual([a.status, a.logged], [500, true], String(err));
      assert.match(a.message, /^internal error \(ref [0-9a-f]{12}\)/);
      assert.ok(!a.message.includes((err as Error).message), 'the error itself stays in the log');
      assert.ok(a.message.includes(`(ref ${a.ref})`), 'under the ref the log has');
    }
  });

  it('the cluster out of reach is 503 with Retry-After; idempotency key errors have their statuses', () => {
    const a = answer(new ClusterUnavailableError('Redis is unavailable; retry when Redis is back', new Error('down')));
    assert.deepEqual([a.status, a.message, a.retryAfter, a.logged], [503, 'Redis is unavailable; retry when Redis is back', '2', false]);
    assert.deepEqual(answer(new IdempotencyKeyError('reused')).status, 422);
    assert.deepEqual(answer(new IdempotencyKeyError('expired')).status, 409);
    assert.deepEqual(answer(new IdempotencyKeyError('unclaimed')).status, 503);
    assert.equal(answer(new IdempotencyKeyError('reused')).message, 'Idempotency-Key was used with a different request');
  });

  it('maps domain errors by their code; a coded error nobody answers on purpose is a logged 500', () => {
    const codes = Object.values(ErrorCodes);
    assert.equal(new Set(codes).size, codes.length, 'each code once');
    for (const code of codes) assert.match(code, /^CSS_ERR_[A-Z_]+$/);
    // A lookalike with the cluster's code but not a ServiceError is not trusted to be one.
    assert.equal(answer(Object.assign(new Error('x'), { code: ErrorCodes.CLUSTER_UNAVAILABLE })).status, 500);
    assert.equal(answer(new ServiceError(ErrorCodes.CLUSTER_UNAVAILABLE, 'owner gone')).status, 503);
    const tool = answer(new ToolError('fetch_url: refused'));
    assert.deepEqual([tool.status, tool.logged], [500, true]);
    assert.match(tool.message, /^internal error \(ref [0-9a-f]{12}\)/);
  });
});

describe('run outcomes as HTTP answers', () => {
  it('draining and overloaded are 503 with the contract’s messages and Retry-After', () => {
    for (const [outcome, message] of [
      ['draining', 'server is draining'],
      ['overloaded', 'server is overloaded, retry later'],
    ] as const) {
      const e = outcomeError({ outcome, message: 'whatever the refusal said' });
      assert.deepEqual([e.status, e.message], [503, message]);
      assert.match(e.headers?.['retry-after'] ?? '', /^\d+$/);
    }
  });

  it('keeps the statuses of the other outcomes', () => {
    const statuses = Object.fromEntries(
      (['busy', 'not_found', 'invalid', 'unavailable', 'capacity', 'shutting_down', 'provider_timeout', 'provider_rate_limited', 'provider_error', 'cancelled', 'stopped', 'internal'] as const).map((o) => [
        o,
        outcomeError({ outcome: o, message: 'm' }).status,
      ]),
    );
    assert.deepEqual(statuses, { busy: 409, not_found: 404, invalid: 400, unavailable: 503, capacity: 503, shutting_down: 503, provider_timeout: 504, provider_rate_limited: 429, provider_error: 502, cancelled: 503, stopped: 409, internal: 500 });
    assert.equal(outcomeError({ outcome: 'capacity', message: 'm' }).headers?.['retry-after'], '1');
  });
});

describe('run result codecs', () => {
  const chatValue = { chatId: null, callId: 'c', provider: 'provider_c', model: 'm', text: 'hi', usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3 }, raw: {}, stopped: false };

  it('decode a run result of each kind, and a failure', () => {
    assert.deepEqual(decodeRunResult('chat', { ok: true, value: chatValue }), { ok: true, value: chatValue });
    assert.deepEqual(decodeRunResult('search', { ok: false, outcome: 'not_found', message: 'search not found' }), { ok: false, outcome: 'not_found', message: 'search not found' });
  });

  it('refuse JSON that is not one, naming the kind', () => {
    assert.throws(() => decodeRunResult('chat', { ok: true, value: { ...chatValue, provider: 'nobody' } }), RunResultDecodeError);
    assert.throws(() => decodeRunResult('title', { ok: true, value: { chat: { id: 1 } } }), /a title run result did not decode/);
    assert.throws(() => decodeRunResult('chat', { ok: false, outcome: 'exploded', message: 'x' }), RunResultDecodeError);
  });
});

describe('every error class of the service', () => {
  it('carries a stable code (a ServiceError, or a `code` of its own where the module may import nothing of the service)', async () => {
    const { readdir, readFile } = await import('node:fs/promises');
    const path = await import('node:path');
    const root = path.resolve(import.meta.dirname, '../..');
    const uncoded: string[] = [];
    for (const top of ['src', 'actors']) {
      for (const file of await readdir(path.join(root, top), { recursive: true })) {
        if (!/\.(ts|mts)$/.test(file)) continue;
        const text = await readFile(path.join(root, top, file), 'utf8');
        // A class straight off Error must say `code` in its body (up to its closing brace at column 0).
        for (const m of text.matchAll(/class (\w+) extends Error \{\n([\s\S]*?)\n\}/g)) {
          if (!/\bcode\b/.test(m[2]!)) uncoded.push(`${top}/${file}: ${m[1]}`);
        }
        for (const m of text.matchAll(/class (\w+) extends Error \{\}/g)) uncoded.push(`${top}/${file}: ${m[1]}`);
      }
    }
    assert.deepEqual(uncoded, []);
  });
});
