// coding_exec and shell_exec against a real SSH server (test/helpers/ssh-server.ts) on 127.0.0.1.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig, type Config } from '../../src/base/config.ts';
import { CpuPool } from '../../src/base/cpu-pool.ts';
import { runTool } from '../../actors/chat-tools.ts';
import { codingExecTool } from '../../src/tools/coding-exec.ts';
import { shellExecTool } from '../../src/tools/shell-exec.ts';
import { ToolError, type ToolContext } from '../../src/tools/types.ts';
import { startSshServer, type TestSshServer } from '../helpers/ssh-server.ts';
import { waitFor } from '../helpers/wait.ts';

// One describe around the file, so its hooks stay its own beside other files in a process (test/run.mjs).
describe('tools/remote-exec', () => {
  let server: TestSshServer;
  let keyDir: string;
  let keyPath: string;

  before(async () => {
    server = await startSshServer();
    keyDir = mkdtempSync(join(tmpdir(), 'ssh-key-'));
    keyPath = join(keyDir, 'id_ed25519');
    writeFileSync(keyPath, server.clientPrivateKey, { mode: 0o600 });
  });
  after(async () => {
    await server.close();
  });

  function config(env: Record<string, string> = {}, s: TestSshServer = server): Config {
    return loadConfig({
      CHAT_CODING_REMOTE_HOST: `${s.username}@${s.host}`,
      CHAT_CODING_REMOTE_PORT: String(s.port),
      CHAT_CODING_SSH_KEY_PATH: keyPath,
      CHAT_CODING_REMOTE_WORKDIR: '~/workspace',
      ...env,
    });
  }

  /** The key of another test server, in place of the main one's file. */
  const keyOf = (s: TestSshServer) => ({ CHAT_CODING_SSH_KEY_PATH: '', CHAT_CODING_SSH_PRIVATE_KEY_B64: Buffer.from(s.clientPrivateKey).toString('base64') });

  // The remote tools never use it: its threads never start.
  const cpu = new CpuPool();

  function ctx(env: Record<string, string> = {}, signal = new AbortController().signal): ToolContext {
    return { config: config(env), signal, cpu };
  }

  function groupAlive(pid: number): boolean {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  }

  /** Waits for the whole process group to be gone (children die a moment after their parent); fails if it stays. */
  const groupGone = (pid: number): Promise<void> => waitFor(() => !groupAlive(pid), 10_000, `process group ${pid} to be gone`);

  describe('host key pinning', () => {
    test('the pinned host key passes; another one is refused with both fingerprints named', async () => {
      const ok = await shellExecTool.run({ command: 'echo pinned' }, ctx({ CHAT_CODING_SSH_HOST_KEY_SHA256: server.hostKeySha256 }));
      assert.match(ok.output, /pinned/);
      const wrong = 'SHA256:' + 'A'.repeat(43);
      await assert.rejects(
        shellExecTool.run({ command: 'echo never' }, ctx({ CHAT_CODING_SSH_HOST_KEY_SHA256: wrong })),
        (err: Error) => err.message.includes(server.hostKeySha256) && err.message.includes('CHAT_CODING_SSH_HOST_KEY_SHA256'),
      );
      assert.ok(!server.execs.some((e) => e.command.includes('echo never')), 'nothing runs on an unverified host');
    });

    test('a malformed fingerprint stops the configuration', () => {
      assert.throws(() => config({ CHAT_CODING_SSH_HOST_KEY_SHA256: 'md5:aa:bb' }), /CHAT_CODING_SSH_HOST_KEY_SHA256/);
    });
  });

  describe('shell_exec', () => {
    test('returns exit code, stdout and stderr', async () => {
      const r = await shellExecTool.run({ command: 'echo hello; echo oops >&2' }, ctx());
      assert.match(r.output, /^exit code: 0\n--- stdout ---\nhello\n--- stderr ---\noops$/);
      assert.match(r.preview ?? '', /exit 0/);
    });

    test('a non-zero exit is a completed call that reports the code', async () => {
      const r = await shellExecTool.run({ command: 'echo partial; exit 3' }, ctx());
      assert.match(r.output, /^exit code: 3/);
      assert.match(r.output, /partial/);
    });

    test('stdin is closed: cat returns at once', async () => {
      // Were stdin open, cat would wait for it until the timeout, and the call would fail as timed out.
      const r = await shellExecTool.run({ command: 'cat; echo after-cat' }, ctx({ CHAT_SHELL_EXEC_TIMEOUT_MS: '5000' }));
      assert.match(r.output, /after-cat/);
    });

    test('runs under bash -lc when bash exists, and the command is expanded once, remotely', async () => {
      const r = await shellExecTool.run({ command: `echo "$(echo inner)" 'single' \${BASH_VERSION:+bash}` }, ctx());
      assert.match(r.output, /--- stdout ---\ninner single bash\n/);
    });

    test('falls back to sh -lc when the remote has no bash', async () => {
      const bin = mkdtempSync(join(tmpdir(), 'nobash-'));
      for (const tool of ['sh', 'mkdir', 'timeout']) symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
      const bare = await startSshServer({ env: { PATH: bin } });
      try {
        const cfg = loadConfig({
          CHAT_CODING_REMOTE_HOST: `${bare.username}@${bare.host}`,
          CHAT_CODING_REMOTE_PORT: String(bare.port),
          CHAT_CODING_SSH_PRIVATE_KEY_B64: Buffer.from(bare.clientPrivateKey).toString('base64'),
        });
        const r = await shellExecTool.run(
          { command: 'echo "${BASH_VERSION:-no bash}"' },
          { config: cfg, signal: new AbortController().signal, cpu },
        );
        assert.match(r.output, /^exit code: 0\n--- stdout ---\nno bash\n/);
      } finally {
        await bare.close();
      }
    });

    test('creates the workdir (leading ~/ expanded remotely, spaces and quotes kept) and starts in it', async () => {
      const r = await shellExecTool.run({ command: 'pwd' }, ctx({ CHAT_CODING_REMOTE_WORKDIR: "~/my work/it's here" }));
      const dir = join(server.home, 'my work', "it's here");
      assert.ok(existsSync(dir), 'workdir created');
      assert.match(r.output, new RegExp(`--- stdout ---\\n${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\n`));
      const abs = join(server.home, 'abs dir');
      const r2 = await shellExecTool.run({ command: 'pwd' }, ctx({ CHAT_CODING_REMOTE_WORKDIR: abs }));
      assert.match(r2.output, new RegExp(`\\n${abs}\\n`));
    });

    test('a long script full of quotes runs: it is sent once, quoted once', async () => {
      // A ~20 KB file written through a heredoc, as a model writes code. Sent four times over and
      // re-quoted it made a ~150 KB command line: past what an SSH server takes in one exec request
      // (this one 35 KB) and past Linux's 128 KB limit for one argument (sshd runs `sh -c <command>`).
      const body = Array.from({ length: 800 }, (_, i) => `print('line ${i}', "it's")`).join('\n');
      const r = await shellExecTool.run({ command: `cat > gen.py <<'EOF'\n${body}\nEOF\nwc -c < gen.py` }, ctx());
      assert.equal(r.output, `exit code: 0\n--- stdout ---\n${Buffer.byteLength(body) + 1}\n--- stderr ---\n(empty)`);
    });

    test('a command too long for a remote command line is refused with a clear error, not sent', async () => {
      const execsBefore = server.execs.length;
      const body = 'x'.repeat(200_000);
      await assert.rejects(
        shellExecTool.run({ command: `printf '%s' '${body}' > big.txt` }, ctx()),
        (err: unknown) =>
          err instanceof ToolError &&
          /^shell_exec: the command is too long: \d+ bytes as a remote command line, at most 131071 \(write large files in several smaller commands\)$/.test(err.message),
      );
      assert.equal(server.execs.length, execsBefore, 'nothing was sent');
    });

    test('caps long output and says so', async () => {
      const r = await shellExecTool.run({ command: "head -c 200000 /dev/zero | tr '\\0' a; echo; echo END" }, ctx());
      assert.match(r.output, /--- stdout \(truncated: 200005 bytes, middle omitted\) ---/);
      assert.match(r.output, /bytes omitted/);
      assert.match(r.output, /END\n--- stderr ---/);
      assert.ok(r.output.length < 70_000);
    });

    test('non-ASCII output comes back intact, cut or not', async () => {
      // 'a' then 2-byte characters: one of them straddles the 32 KB boundary of the kept head.
      const text = `a${'é'.repeat(20_000)}`;
      const r = await shellExecTool.run({ command: `printf 'a'; i=0; while [ $i -lt 200 ]; do printf '${'é'.repeat(100)}'; i=$((i+1)); done` }, ctx());
      assert.equal(r.output, `exit code: 0\n--- stdout ---\n${text}\n--- stderr ---\n(empty)`);
      const cut = await shellExecTool.run({ command: `printf 'a'; i=0; while [ $i -lt 500 ]; do printf '${'é'.repeat(100)}'; i=$((i+1)); done` }, ctx());
      assert.doesNotMatch(cut.output, /\uFFFD/, 'no character is cut in two where the middle is omitted');
      assert.match(cut.output, /--- stdout \(truncated: 100001 bytes, middle omitted\) ---\naé+\n\[… \d+ bytes omitted; 100001 bytes in total …\]\né+\n--- stderr ---/);
    });

    test('the timeout kills the remote sleep and the tool returns with an error', async () => {
      const execsBefore = server.execs.length;
      await assert.rejects(
        shellExecTool.run({ command: 'sleep 30' }, ctx({ CHAT_SHELL_EXEC_TIMEOUT_MS: '800' })),
        (err: unknown) =>
          err instanceof ToolError && /timed out after 800 ms \(CHAT_SHELL_EXEC_TIMEOUT_MS\)/.test(err.message),
      );
      const rec = server.execs[execsBefore]!;
      await groupGone(rec.pid!); // the remote process group, incl. sleep
      // Ended by TERM: no KILL followed it (a group that outlived TERM gets one after the grace period).
      assert.deepEqual(rec.signals, ['TERM'], 'TERM sent over the channel');
    });

    test('a command stopped at its deadline still reports what it printed', async () => {
      // The model learns how far a long build (or a coding CLI's ten minutes of work) got.
      const err = await shellExecTool
        .run({ command: 'echo step-1-done; echo compiling >&2; sleep 30' }, ctx({ CHAT_SHELL_EXEC_TIMEOUT_MS: '3000' }))
        .then(() => assert.fail('a timeout'), (e: unknown) => e);
      assert.ok(err instanceof ToolError);
      assert.match(err.message, /^shell_exec timed out after 3000 ms/);
      assert.equal(err.output, 'output before it was stopped:\n--- stdout ---\nstep-1-done\n--- stderr ---\ncompiling');
      // The tool result the run stores and sends back to the model holds both.
      const done = await runTool(
        { c: 'tool', round: 1, index: 0, tool: shellExecTool, name: 'shell_exec', args: { command: 'echo half-way; sleep 30' }, invalid: null, signal: new AbortController().signal },
        ctx({ CHAT_SHELL_EXEC_TIMEOUT_MS: '3000' }),
      );
      assert.match(done.error ?? '', /^shell_exec timed out after 3000 ms \(CHAT_SHELL_EXEC_TIMEOUT_MS\); the remote command was stopped$/);
      assert.equal(done.output, `Error: ${done.error}\n\noutput before it was stopped:\n--- stdout ---\nhalf-way\n--- stderr ---\n(empty)`);
    });

    test('a command that ignores TERM is KILLed after the grace period', async () => {
      const execsBefore = server.execs.length;
      // Stopped once it ignores TERM: a stop that came before its trap (a deadline on a loaded machine)
      // would end it with TERM alone.
      const ready = join(mkdtempSync(join(tmpdir(), 'ignores-term-')), 'ready');
      const ac = new AbortController();
      const running = shellExecTool.run({ command: `trap '' TERM; touch '${ready}'; sleep 30; echo survived` }, ctx({}, ac.signal));
      await waitFor(() => existsSync(ready), 30_000, 'the command to ignore TERM');
      ac.abort();
      await assert.rejects(running, (err: unknown) => err instanceof ToolError && /cancelled/.test(err.message));
      const rec = server.execs[execsBefore]!;
      await groupGone(rec.pid!);
      assert.deepEqual(rec.signals, ['TERM', 'KILL']);
    });

    test('cancelling (ctx.signal) stops the remote command', async () => {
      const ac = new AbortController();
      const execsBefore = server.execs.length;
      const running = shellExecTool.run({ command: 'sleep 30' }, ctx({}, ac.signal));
      // Cancelled once the command runs on the server.
      await waitFor(() => server.execs.length > execsBefore, 10_000, 'the command to start');
      ac.abort();
      await assert.rejects(
        running,
        (err: unknown) => err instanceof ToolError && /cancelled/.test(err.message),
      );
      const rec = server.execs[execsBefore]!;
      await groupGone(rec.pid!);
      assert.ok(rec.signals.includes('TERM'));
    });
  });

  describe('coding_exec', () => {
    test('passes the task as one quoted argument: quotes and $(...) reach the CLI unexpanded', async () => {
      const task = `He said "hi" & it's $(echo pwned) \`id\` $HOME; touch /tmp/should-not-exist-${process.pid}`;
      const r = await codingExecTool.run(
        { task },
        ctx({ CHAT_CODING_COMMAND: `printf '%s\\n'`, CHAT_CODING_REMOTE_WORKDIR: '~/coding' }),
      );
      assert.equal(r.output, `exit code: 0\n--- stdout ---\n${task}\n--- stderr ---\n(empty)`);
      assert.equal(existsSync(`/tmp/should-not-exist-${process.pid}`), false);
      assert.ok(existsSync(join(server.home, 'coding')));
    });

    test('a task that begins with "-" (a Markdown list) is the task, not options of the CLI', async () => {
      // A CLI that parses its arguments the usual way (util.parseArgs here, clap or getopt elsewhere).
      const cli = join(server.home, 'cli.mjs');
      writeFileSync(
        cli,
        `import { parseArgs } from 'node:util';\n` +
          `const { positionals } = parseArgs({ options: { json: { type: 'boolean' } }, allowPositionals: true });\n` +
          `console.log('task: ' + positionals[0].trim());\n`,
      );
      const task = '- Fix the failing test in src/a.ts\n- Run the tests';
      const r = await codingExecTool.run({ task }, ctx({ CHAT_CODING_COMMAND: `node ${cli}` }));
      assert.equal(r.output, `exit code: 0\n--- stdout ---\ntask: ${task}\n--- stderr ---\n(empty)`);
      const flag = await codingExecTool.run({ task: '--json' }, ctx({ CHAT_CODING_COMMAND: `node ${cli}` }));
      assert.match(flag.output, /^exit code: 0\n--- stdout ---\ntask: --json\n/);
    });

    test('runs in the workdir and reports a failing CLI exit code', async () => {
      const r = await codingExecTool.run(
        { task: 'fix it' },
        ctx({ CHAT_CODING_COMMAND: 'sh -c \'pwd; echo "task: $1" >&2; exit 7\' cli' }),
      );
      assert.match(r.output, /^exit code: 7\n--- stdout ---\n.*\/workspace\n--- stderr ---\ntask: fix it$/);
    });

    test('honours CHAT_CODING_EXEC_TIMEOUT_MS', async () => {
      await assert.rejects(
        codingExecTool.run({ task: 'x' }, ctx({ CHAT_CODING_COMMAND: 'sleep 20; echo', CHAT_CODING_EXEC_TIMEOUT_MS: '500' })),
        /coding_exec timed out after 500 ms \(CHAT_CODING_EXEC_TIMEOUT_MS\)/,
      );
    });
  });

  describe('SSH configuration', () => {
    test('user from CHAT_CODING_REMOTE_USER when the host has no user@', async () => {
      const r = await shellExecTool.run(
        { command: 'echo ok' },
        ctx({ CHAT_CODING_REMOTE_HOST: server.host, CHAT_CODING_REMOTE_USER: server.username }),
      );
      assert.match(r.output, /ok/);
      assert.equal(server.execs.at(-1)!.username, server.username);
    });

    test('user@host wins and is parsed off the host', async () => {
      await assert.rejects(
        shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_REMOTE_HOST: `someone@${server.host}`, CHAT_CODING_REMOTE_USER: server.username })),
        (err: unknown) => err instanceof ToolError && /SSH connection to someone@127\.0\.0\.1:\d+ failed: .*authentication/i.test(err.message),
      );
      assert.equal(server.authAttempts.at(-1), 'someone');
    });

    test('key from CHAT_CODING_SSH_PRIVATE_KEY_B64', async () => {
      const r = await shellExecTool.run(
        { command: 'echo b64' },
        ctx({ CHAT_CODING_SSH_KEY_PATH: '', CHAT_CODING_SSH_PRIVATE_KEY_B64: Buffer.from(server.clientPrivateKey).toString('base64') }),
      );
      assert.match(r.output, /b64/);
    });

    test('missing host, user or key: clear errors naming the variables', async () => {
      await assert.rejects(shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_REMOTE_HOST: '' })), /set CHAT_CODING_REMOTE_HOST/);
      await assert.rejects(
        shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_REMOTE_HOST: server.host })),
        /CHAT_CODING_REMOTE_HOST as user@host or set CHAT_CODING_REMOTE_USER/,
      );
      await assert.rejects(
        shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_SSH_KEY_PATH: '' })),
        /CHAT_CODING_SSH_KEY_PATH, or CHAT_CODING_SSH_PRIVATE_KEY_B64/,
      );
      await assert.rejects(
        shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_SSH_KEY_PATH: join(keyDir, 'nope') })),
        /cannot read the SSH key at CHAT_CODING_SSH_KEY_PATH/,
      );
      await assert.rejects(
        shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_SSH_KEY_PATH: '', CHAT_CODING_SSH_PRIVATE_KEY_B64: 'bm90IGEga2V5' })),
        /SSH private key from CHAT_CODING_SSH_PRIVATE_KEY_B64 cannot be used/,
      );
    });

    test('an unreachable host is a ToolError, not a crash', async () => {
      await assert.rejects(
        shellExecTool.run({ command: 'true' }, ctx({ CHAT_CODING_REMOTE_PORT: '1' })),
        (err: unknown) => err instanceof ToolError && /SSH connection to tester@127\.0\.0\.1:1 failed: .*ECONNREFUSED/.test(err.message),
      );
    });

    test('handshakes to one host are bounded (CHAT_CODING_SSH_MAX_HANDSHAKES); the rest wait their turn', async () => {
      // A server that holds every authentication until the test lets it go, so that unbounded
      // handshakes would all be open at once, as a stock sshd's MaxStartups (10:30:100) then drops
      // some of them at random. Each round is let go once the bound's worth of calls is held there.
      const slow = await startSshServer({ holdAuth: true });
      try {
        const env = { ...keyOf(slow), CHAT_CODING_SSH_MAX_HANDSHAKES: '3', ACTOR_THREADS: '1' };
        const c: ToolContext = { config: config(env, slow), signal: new AbortController().signal, cpu };
        const all = Promise.all(Array.from({ length: 12 }, (_, i) => shellExecTool.run({ command: `echo call-${i}` }, c)));
        for (let released = 0; released < 12; ) {
          const round = Math.min(3, 12 - released);
          await waitFor(() => slow.heldAuths() === round, 10_000, `${round} handshakes held`);
          released += slow.releaseAuths();
        }
        const runs = await all;
        runs.forEach((r, i) => assert.match(r.output, new RegExp(`^exit code: 0\n--- stdout ---\ncall-${i}\n`)));
        assert.ok(slow.handshakes.max <= 3, `at most 3 handshakes at once, saw ${slow.handshakes.max}`);
        assert.equal(slow.handshakes.now, 0);
      } finally {
        await slow.close();
      }
    });

    test('a call cancelled while it waits for a handshake slot never connects', async () => {
      const slow = await startSshServer({ holdAuth: true });
      try {
        const env = { ...keyOf(slow), CHAT_CODING_SSH_MAX_HANDSHAKES: '1', ACTOR_THREADS: '1' };
        const first: ToolContext = { config: config(env, slow), signal: new AbortController().signal, cpu };
        const cancel = new AbortController();
        const running = shellExecTool.run({ command: 'echo first' }, first);
        // The first call's handshake is held at the server, so the slot stays taken until it is let go.
        await waitFor(() => slow.heldAuths() === 1, 10_000, 'the first handshake');
        const waiting = shellExecTool.run({ command: 'echo never' }, { ...first, signal: cancel.signal });
        cancel.abort();
        await assert.rejects(waiting, (err: unknown) => err instanceof ToolError && /cancelled/.test(err.message));
        slow.releaseAuths();
        assert.match((await running).output, /first/);
        assert.equal(slow.handshakes.total, 1, 'the cancelled call made no connection');
      } finally {
        await slow.close();
      }
    });

    test('a missing command argument is a ToolError', async () => {
      await assert.rejects(shellExecTool.run({}, ctx()), /argument "command" must be a non-empty string/);
    });
  });
});
