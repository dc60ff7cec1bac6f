// The remote tools inside a real completion: the model (simulator) asks for shell_exec and
// coding_exec, the service runs them over SSH on a real SSH server, stores the tool messages and
// hands the output back to the model; a stop while a command runs kills it.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readSse, sim, startTestServer, waitFor, type SseEvent, type TestServer } from '../helpers/server.ts';
import { startSshServer, type TestSshServer } from '../helpers/ssh-server.ts';

describe('remote tools in the chat tool loop', () => {
  let ssh: TestSshServer;
  let t: TestServer;
  before(async () => {
    ssh = await startSshServer();
    const keyPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'loop-key-')), 'id');
    writeFileSync(keyPath, ssh.clientPrivateKey, { mode: 0o600 });
    t = await startTestServer({
      env: {
        CHAT_SHELL_TOOL_ENABLED: 'true',
        CHAT_CODING_TOOL_ENABLED: 'true',
        CHAT_CODING_REMOTE_HOST: `${ssh.username}@${ssh.host}`,
        CHAT_CODING_REMOTE_PORT: String(ssh.port),
        CHAT_CODING_SSH_KEY_PATH: keyPath,
        CHAT_CODING_SSH_HOST_KEY_SHA256: ssh.hostKeySha256,
        // A stand-in for the coding CLI: the task must arrive as one quoted argument.
        CHAT_CODING_COMMAND: 'printf "CODING:%s\\n"',
      },
    });
  });
  after(async () => {
    await t.close();
    await ssh.close();
  });

  it('lists the remote tools once they are enabled', async () => {
    const tools = (await t.call('GET', '/v1/chat-tools')).body.tools.map((x: { name: string }) => x.name);
    assert.deepEqual(tools, ['web_search', 'fetch_url', 'coding_exec', 'shell_exec']);
  });

  it('runs shell_exec and coding_exec over SSH, stores their output and returns it to the model', async () => {
    const r = await t.stream('/v1/chat-completions/stream', {
      provider: 'provider_c',
      model: 'm',
      messages: [
        {
          role: 'user',
          content: sim({
            tools: [
              { name: 'shell_exec', args: { command: 'echo from-the-shell; exit 3' } },
              { name: 'coding_exec', args: { task: "fix the bug; don't `rm -rf` $HOME" } },
            ],
          }),
        },
      ],
    });
    assert.equal(r.events.at(-1)!.event, 'done');
    const terminal = r.events.filter((e) => e.event === 'tool_call' && e.data.status !== 'initiated').map((e) => e.data);
    const shell = terminal.find((c) => c.name === 'shell_exec');
    const coding = terminal.find((c) => c.name === 'coding_exec');
    assert.equal(shell.status, 'completed', 'a non-zero exit is reported to the model, not a failed call');
    assert.match(shell.resultPreview, /from-the-shell/);
    assert.match(shell.resultPreview, /3/);
    assert.equal(coding.status, 'completed');
    assert.match(coding.resultPreview, /CODING:fix the bug; don't `rm -rf` \$HOME/, 'the task reaches the CLI verbatim');

    const detail = (await t.call('GET', `/v1/chats/${r.events[0]!.data.chatId}`)).body.chat;
    const stored = detail.messages.filter((m: { role: string }) => m.role === 'tool');
    assert.equal(stored.length, 2);
    assert.ok(stored.some((m: { content: string }) => m.content.includes('from-the-shell')));
    const followUp = [...t.sim.requests].reverse().find((x) => x.upstream === 'provider_c' && x.method === 'POST')!;
    const toolMessages = followUp.body.messages.filter((m: { role: string }) => m.role === 'tool');
    assert.equal(toolMessages.length, 2, 'both outputs went back to the model');
  });

  it('a stop while shell_exec runs kills the remote command and stores the tool call as failed', async () => {
    const controller = new AbortController();
    const res = await fetch(`${t.url}/v1/chat-completions/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ provider: 'provider_c', model: 'm', messages: [{ role: 'user', content: sim({ tools: [{ name: 'shell_exec', args: { command: 'sleep 60; echo never' } }] }) }] }),
      signal: controller.signal,
    });
    let chatId = '';
    const execsBefore = ssh.execs.length;
    const events: SseEvent[] = await readSse(res, controller, undefined, async (ev) => {
      if (ev.event === 'meta') chatId = ev.data.chatId;
      if (ev.event === 'tool_call' && ev.data.status === 'initiated') {
        // The command is running on the SSH server before we stop.
        await waitFor(() => ssh.execs.length > execsBefore, 30_000, 'the command to reach the SSH server');
        assert.equal((await t.call('POST', `/v1/chats/${chatId}/stream/stop`)).status, 200);
      }
    });
    const terminal = events.filter((e) => e.event === 'tool_call').at(-1)!.data;
    assert.equal(terminal.status, 'failed');
    assert.deepEqual([events.at(-1)!.event, events.at(-1)!.data.stopped], ['done', true]);
    await ssh.execs.at(-1)!.exited; // the remote process is gone, long before its 60 s
    const chat = (await t.call('GET', `/v1/chats/${chatId}`)).body.chat;
    const tool = chat.messages.find((m: { role: string }) => m.role === 'tool');
    assert.equal(tool.metadata.status, 'failed');
    assert.equal(chat.lastRun.status, 'stopped');
  });
});
