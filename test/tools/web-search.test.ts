// web_search tool against the offline simulator's engines.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../src/base/config.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { webSearchTool } from '../../src/tools/web-search.ts';
import { ToolError, type ToolContext } from '../../src/tools/types.ts';
import { startSimulator, type SimHandle } from '../../src/sim/server.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('tools/web-search', () => {
  let sim: SimHandle;
  before(async () => {
    sim = await startSimulator();
  });
  after(async () => {
    await sim.close();
  });

  function ctx(env: Record<string, string>): ToolContext {
    return { config: loadConfig(env), signal: new AbortController().signal, cpu: new CpuPool() };
  }
  const engineA = () => ({ ENGINE_A_API_KEY: 'k', ENGINE_A_BASE_URL: sim.urls.engine_a });
  const engineB = () => ({ CHAT_WEB_SEARCH_ENGINE: 'engine_b', CHAT_ENGINE_B_BASE_URL: sim.urls.engine_b });

  test('engine_a: ranked results with title, URL, summary and snippet', async () => {
    sim.clearRequests();
    const r = await webSearchTool.run({ query: 'tide pools', numResults: 3 }, ctx(engineA()));
    const body = sim.requests[0]!.body;
    assert.equal(body.numResults, 3);
    assert.deepEqual(body.contents, { highlights: { maxCharacters: 500 }, summary: { query: 'tide pools' } });
    assert.match(r.output, /^Web search results for "tide pools" \(engine_a, 3 results\):\n\n1\. Tide Pools — /);
    assert.match(r.output, /\n   URL: https:\/\/[^\n]+\/tide-pools\/1\n/);
    assert.match(r.output, /\n   Summary: Summary: Tide Pools/);
    assert.match(r.output, /\n   Snippet: /);
    assert.match(r.output, /\n3\. /);
    assert.doesNotMatch(r.output, /\n4\. /);
    assert.match(r.preview!, /^3 results: https:\/\//);
  });

  test('engine_b: chosen by CHAT_WEB_SEARCH_ENGINE, numResults default and clamping', async () => {
    sim.clearRequests();
    const r = await webSearchTool.run({ query: 'rust async' }, ctx(engineB()));
    assert.equal(sim.requests[0]!.upstream, 'engine_b');
    assert.match(r.output, /\(engine_b, 8 results\)/);
    assert.match(r.output, /Snippet: Rust Async\. This page/);
    const many = await webSearchTool.run({ query: 'rust async', numResults: 500 }, ctx(engineB()));
    assert.match(many.output, /\(engine_b, 10 results\)/); // the engine sends 10; asking for more is clamped to 20
    const untitled = await webSearchTool.run({ query: 'rust async', numResults: 7 }, ctx(engineA()));
    assert.match(untitled.output, /\n7\. \(untitled\)\n/);
  });

  test('missing configuration is a ToolError naming the variables', async () => {
    await assert.rejects(webSearchTool.run({ query: 'x' }, ctx({})), (e: unknown) =>
      e instanceof ToolError && /engine_a needs ENGINE_A_API_KEY and ENGINE_A_BASE_URL/.test(e.message),
    );
    await assert.rejects(webSearchTool.run({ query: 'x' }, ctx({ ENGINE_A_BASE_URL: sim.urls.engine_a })), /engine_a needs ENGINE_A_API_KEY$/);
    await assert.rejects(
      webSearchTool.run({ query: 'x' }, ctx({ CHAT_WEB_SEARCH_ENGINE: 'engine_b' })),
      /CHAT_WEB_SEARCH_ENGINE=engine_b needs CHAT_ENGINE_B_BASE_URL/,
    );
  });

  test('engine failures come back as ToolErrors with the engine message', async () => {
    await assert.rejects(
      webSearchTool.run({ query: 'x SIM {"searchStatus":500}' }, ctx(engineA())),
      (e: unknown) => e instanceof ToolError && /^web search failed: engine_a \/search failed with HTTP 500: Simulated search failure/.test(e.message),
    );
    await assert.rejects(
      webSearchTool.run({ query: 'x' }, ctx({ CHAT_WEB_SEARCH_ENGINE: 'engine_b', CHAT_ENGINE_B_BASE_URL: sim.urls.engine_b_nojson })),
      /must allow the JSON output format/,
    );
    await assert.rejects(webSearchTool.run({ query: 'x SIM {"searchStatus":429}' }, ctx(engineB())), /HTTP 429/);
  });

  test('bad arguments are ToolErrors the model can act on', async () => {
    await assert.rejects(webSearchTool.run({}, ctx(engineA())), /argument "query" must be a non-empty string/);
    await assert.rejects(webSearchTool.run({ query: 'x', numResults: 'many' }, ctx(engineA())), /"numResults" must be an integer/);
    assert.equal(webSearchTool.summarize({ query: 'tide pools' }), 'Searching the web for "tide pools"');
  });
});
