// The web client's SSE reader (web/sse.js, plain browser JS with no DOM use): comment lines are
// skipped, several data lines are joined, events split anywhere across chunks come out whole.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
// @ts-expect-error plain JavaScript module of the web client, no types
import { sseParser } from '../../web/sse.js';

function parse(chunks: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const feed = sseParser((name: string, data: string) => out.push([name, data]));
  for (const c of chunks) feed(c);
  return out;
}

describe('web client SSE reader', () => {
  const stream = ': open\n\nevent: meta\ndata: {"a":1}\n\n: ping\n\nevent: delta\ndata: {"text":"x"}\n\n';

  it('skips comments such as the opening `: open` and the `: ping` heartbeat', () => {
    assert.deepEqual(parse([stream]), [['meta', '{"a":1}'], ['delta', '{"text":"x"}']]);
  });

  it('gives the same events whatever the chunk boundaries, one byte at a time included', () => {
    assert.deepEqual(parse([...stream]), parse([stream]));
    assert.deepEqual(parse([stream.slice(0, 17), stream.slice(17, 40), stream.slice(40)]), parse([stream]));
  });

  it('joins several data lines with a newline, accepts CRLF, defaults the name to message', () => {
    assert.deepEqual(parse(['data: one\r\ndata:two\r\n\r\nevent: done\ndata\n\n']), [
      ['message', 'one\ntwo'],
      ['done', ''],
    ]);
  });

  it('holds an unfinished event until its blank line arrives', () => {
    assert.deepEqual(parse(['event: delta\ndata: {"text":"y"}\n']), []);
  });
});
