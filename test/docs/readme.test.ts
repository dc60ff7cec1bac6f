// The READMEs as a newcomer reads them: every link stays inside the repository and leads to a
// file that is there, every repository path a doc or a source comment names is there (or, when it names
// one dropped since, in git at the commit it cites), and the browser SSE client of docs/clients.md really works against the service, over a
// stream that carries the `: open` comment and `: ping` heartbeats.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
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

/** The files whose prose names repository paths: the docs whole, and the comments of the code, SQL and scripts. */
function citingFiles(): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) =>
      e.name === 'node_modules' ? [] : e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)],
    );
  const docs = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f));
  const code = ['src', 'actors', 'bench', 'test', 'sql'].flatMap(walk).filter((f) => /\.(ts|mts|mjs|cjs|sql)$|README\.md$/.test(f));
  return ['README.md', ...docs, ...code, 'Makefile', '.ci/run', 'tsconfig.json'];
}

/** What of `text` is prose: a Markdown file whole, else its comment lines (and a line's trailing comment). */
function prose(file: string, text: string): string {
  if (file.endsWith('.md')) return text;
  const comment = file.endsWith('.sql') ? /^\s*--|\s--\s/ : /^\s*(\/\/|\*|\/\*|#)|\s\/\/\s/;
  return text
    .split('\n')
    .map((line) => (comment.test(line) ? line : ''))
    .join('\n');
}

const CITED = /(?<![\w./-])(?:src|actors|bench|test|docs|sql|web|deploy|\.ci)\/[\w.@-]+(?:\/[\w.@-]+)*/g;
/** Not cited as a file: written by a run (git ignores them), or a pattern (`bench/results.*`, `sql/NNN_name.sql`). */
const NOT_A_FILE = /^(bench\/out|data)(\/|$)/;

/** Whether `cited` names a file or folder of the repository (a module or a test file may be named without its .ts or .test.ts, a migration by its number). */
function cites(cited: string): boolean {
  if (['', '.ts', '.test.ts'].some((ext) => existsSync(path.join(root, cited + ext)))) return true;
  const migration = /^sql\/(\d{3})$/.exec(cited);
  return migration !== null && readdirSync(path.join(root, 'sql')).some((f) => f.startsWith(`${migration[1]}_`));
}

/** A path dropped since, named near the commit that has it ("… in git at d8cf097"): true when git has it there. */
function inGitAt(cited: string, around: string): boolean {
  return [...around.matchAll(/\bat\s+([0-9a-f]{7,40})\b/g)].some(([, commit]) => {
    try {
      execFileSync('git', ['cat-file', '-e', `${commit}:${cited}`], { cwd: root, stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  });
}

describe('paths the docs and the comments name', () => {
  it('are files of the repository (or, dropped since, in git at the commit they cite)', async () => {
    const problems: string[] = [];
    for (const file of citingFiles()) {
      const text = prose(file, await readFile(path.join(root, file), 'utf8'));
      for (const m of text.matchAll(CITED)) {
        const cited = m[0].replace(/[.,:;]+$/, '');
        const next = text[m.index + m[0].length];
        if (NOT_A_FILE.test(cited) || /NNN/.test(cited) || next === '*' || next === '{') continue;
        if (cites(cited) || inGitAt(cited, text.slice(Math.max(0, m.index - 300), m.index + 300))) continue;
        problems.push(`${file}: ${cited}`);
      }
      // A root document by its name (README.md, a design file that is not in the repository).
      for (const m of text.matchAll(/(?<![\w./-])([A-Z][A-Z_-]+\.md)\b/g)) if (!existsSync(path.join(root, m[1]!))) problems.push(`${file}: ${m[1]}`);
      // A section cited by its heading, or the heading's part before a colon: (docs/operations.md, "Answers that outlive their instance").
      for (const m of text.matchAll(/\b(docs\/[\w-]+\.md|README(?:\.md)?),? "([^"]+)"/g)) {
        const doc = m[1]!.startsWith('README') ? 'README.md' : m[1]!;
        if (!existsSync(path.join(root, doc))) continue;
        const headings = (await readFile(path.join(root, doc), 'utf8')).split('\n').filter((l) => l.startsWith('#'));
        const cited = m[2]!.replace(/\s+/g, ' ');
        const named = (h: string) => [h.replace(/^#+\s*/, '').trim(), h.replace(/^#+\s*/, '').split(':')[0]!.trim()].includes(cited);
        if (!headings.some(named)) problems.push(`${file}: ${doc} has no section "${m[2]}"`);
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
