// Which tools exist for a configuration.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../../src/base/config.ts';
import { availableTools } from '../../src/tools/registry.ts';

const names = (tools: { name: string }[]) => tools.map((t) => t.name);

test('web_search and fetch_url always; remote tools only when enabled', () => {
  assert.deepEqual(names(availableTools(loadConfig({}))), ['web_search', 'fetch_url']);
  const coding = loadConfig({ CHAT_CODING_TOOL_ENABLED: 'true', CHAT_CODING_REMOTE_HOST: 'u@h' });
  assert.deepEqual(names(availableTools(coding)), ['web_search', 'fetch_url', 'coding_exec']);
  const both = loadConfig({ CHAT_CODING_TOOL_ENABLED: 'true', CHAT_SHELL_TOOL_ENABLED: 'true', CHAT_CODING_REMOTE_HOST: 'u@h' });
  assert.deepEqual(names(availableTools(both)), ['web_search', 'fetch_url', 'coding_exec', 'shell_exec']);
  const shell = loadConfig({ CHAT_SHELL_TOOL_ENABLED: 'true', CHAT_CODING_REMOTE_HOST: 'u@h' });
  assert.deepEqual(names(availableTools(shell)), ['web_search', 'fetch_url', 'shell_exec']);
});

test('every tool has a usable schema and description', () => {
  const all = availableTools(loadConfig({ CHAT_CODING_TOOL_ENABLED: 'true', CHAT_SHELL_TOOL_ENABLED: 'true', CHAT_CODING_REMOTE_HOST: 'u@h' }));
  for (const t of all) {
    assert.ok(t.description.length > 80, t.name);
    assert.equal((t.parameters as { type: string }).type, 'object');
    assert.ok(Array.isArray((t.parameters as { required: string[] }).required));
    assert.equal(typeof t.summarize({}), 'string');
  }
  assert.match(all.find((t) => t.name === 'coding_exec')!.description, /^Delegates coding, shell, repository inspection and other complex software tasks to a persistent remote coding CLI workspace over SSH/);
});
