// The READMEs as a newcomer reads them: every link stays inside the repository and leads to a
// file that is there, and the browser SSE client of docs/clients.md really works against the service, over a
// stream that carries the `: open` comment and `: ping` heartbeats.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { sim, startTestServer, type TestServer } from '../helpers/server.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

async function markdownFiles(): Promise<string[]> {
  const docs = (await readdir(path.join(root, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f));
  return ['README.md', 'src/sim/README.md', ...docs];
}

describe('README links', () => {
  it('point inside the repository, at files that exist', async () => {
    const problems: string[] = [];
    for (const file of await markdownFiles()) {
      const text = await readFile(path.join(root, file), 'utf8');
      if (/\/work\/|\.\.\/shared\//.test(text)) problems.push(`${file}: names a path outside the repository`);
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!;
        if (/^(https?:|mailto:)/.test(target) || target === '') continue;
        const resolved = path.resolve(path.dirname(path.join(root, file)), target);
        if (!resolved.startsWith(root)) problems.push(`${file}: ${target} leaves the repository`);
        else if (!existsSync(resolved)) problems.push(`${file}: ${target} does not exist`);
      }
    }
    assert.deepEqual(problems, []);
  });
});

describe('docs a newcomer reads in an hour', () => {
  it('keep the README and the performance page short (the history is in git)', async () => {
    const lines = async (file: string) => (await readFile(path.join(root, file), 'utf8')).split('\n').length;
    assert.ok((await lines('README.md')) <= 250, 'README.md is at most 250 lines');
    assert.ok((await lines('docs/performance.md')) <= 400, 'docs/performance.md is at most 400 lines');
  });
});

describe("the browser SSE client of docs/clients.md", () => {
  let t: TestServer;
  let dir: string;
  let streamEvents: (url: string, body: unknown, onEvent: (event: string, data: any) => void, headers?: Record<string, string>) => Promise<void>;
  before(async () => {
    const readme = await readFile(path.join(root, 'docs', 'clients.md'), 'utf8');
    const m = /<!-- example: sse-client -->\s*```js\n([\s\S]*?)```/.exec(readme);
    assert.ok(m, 'docs/clients.md has the example');
    dir = await mkdtemp(path.join(os.tmpdir(), 'readme-example-'));
    const file = path.join(dir, 'sse-client.mjs');
    await writeFile(file, m[1]!);
    ({ streamEvents } = await import(pathToFileURL(file).href));
    t = await startTestServer({ env: { SSE_HEARTBEAT_MS: '100' } });
  });
  after(async () => {
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a stream with comments and heartbeats: every event, parsed, none lost', async () => {
    // About 1.5 s of deltas: several `: ping` comments fall between them.
    const content = sim({ reply: 'one two three four five six', deltas: 6, rate: 4 });
    const body = { provider: 'provider_c', model: 'sim-c-large', persist: false, messages: [{ role: 'user', content }] };

    const raw = await fetch(`${t.url}/v1/chat-completions/stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.text());
    assert.match(raw, /^: open\n\n/, 'the stream opens with a comment');
    assert.match(raw, /\n: ping\n\n/, 'and carries heartbeats');

    const events: Array<[string, any]> = [];
    await streamEvents(`${t.url}/v1/chat-completions/stream`, body, (event, data) => events.push([event, data]));
    assert.equal(events[0]![0], 'meta');
    assert.equal(events.at(-1)![0], 'done');
    const deltas = events.filter(([e]) => e === 'delta').map(([, d]) => d.text);
    assert.ok(deltas.length >= 1);
    assert.ok(events.every(([e]) => ['meta', 'delta', 'done'].includes(e)), 'no comment surfaced as an event');
    assert.equal(deltas.join(''), events.at(-1)![1].text);
    assert.equal(events.at(-1)![1].text, 'one two three four five six');
  });

  it('reports an error answered before the stream opens', async () => {
    await assert.rejects(
      streamEvents(`${t.url}/v1/chat-completions/stream`, { provider: 'provider_c' }, () => {}),
      /^Error: 400: invalid request body: model/,
    );
  });
});
