// The SSH runner behind coding_exec and shell_exec: one connection per call, one `exec`, stdin closed
// at once (remote tools must never wait for input), capped stdout/stderr, and a deadline that ends the
// remote process. A non-zero exit is a normal result the model should see; only timeouts, cancellation
// and connection failures are errors.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ClientChannel, ConnectConfig } from 'ssh2';
import type { Config } from '../base/config.ts';
import { messageOf } from './args.ts';
import { CappedOutput } from './capped-output.ts';
import { handshakesPerThread, handshakeTurn } from './handshake-gate.ts';
import { ToolError } from './types.ts';

// Loaded on first use (require caches it): a service whose remote tools are never called, and every
// actor thread until one is, skips its ~80 ms of CPU. CommonJS, so require, not a dynamic import.
const require = createRequire(import.meta.url);
const ssh2 = (): typeof import('ssh2') => require('ssh2');

export type SshConfig = Pick<
  Config,
  | 'CHAT_CODING_REMOTE_HOST'
  | 'CHAT_CODING_REMOTE_USER'
  | 'CHAT_CODING_REMOTE_PORT'
  | 'CHAT_CODING_SSH_KEY_PATH'
  | 'CHAT_CODING_SSH_PRIVATE_KEY_B64'
  | 'CHAT_CODING_SSH_HOST_KEY_SHA256'
  | 'CHAT_CODING_SSH_MAX_HANDSHAKES'
  | 'actorThreads'
>;

export interface SshTarget {
  host: string;
  port: number;
  username: string;
  privateKey: Buffer;
  /** Expected host key fingerprint (base64 of SHA-256, no padding); null accepts any host key. */
  hostKeySha256: string | null;
  /** Handshakes with the host at once from this thread (handshake-gate.ts). */
  maxHandshakes: number;
}

/** The OpenSSH fingerprint of a host key in SSH wire format: base64 of its SHA-256, unpadded. */
export function hostKeyFingerprint(key: Buffer): string {
  return createHash('sha256').update(key).digest('base64').replace(/=+$/, '');
}

export interface SshRunOptions {
  /** Which tool runs this, for messages. */
  tool: string;
  timeoutMs: number;
  /** The variable that sets timeoutMs, named in the timeout message. */
  timeoutVariable: string;
  signal: AbortSignal;
  /** Per-stream cap in bytes. */
  maxOutputBytes?: number;
}

export interface SshResult {
  exitCode: number | null;
  /** Set when the remote process was ended by a signal. */
  exitSignal: string | null;
  stdout: CappedOutput;
  stderr: CappedOutput;
}

const DEFAULT_OUTPUT_BYTES = 64 * 1024;
/** Between TERM and KILL: lets `timeout`/the shell pass TERM on to the process group first. */
const KILL_GRACE_MS = 1500;

interface ChannelInternals {
  outgoing?: { id: number; state: string };
  _client?: { _protocol?: { signal(id: number, name: string): void } };
}

/**
 * Sends a `signal` channel request. ssh2's public `signal()` is a no-op once stdin has been closed
 * (it requires a writable channel), and we close stdin first thing, so this goes one level down to the
 * same protocol call for as long as the channel is not closing.
 */
function sendSignal(ch: ClientChannel, name: 'TERM' | 'KILL'): void {
  const c = ch as unknown as ChannelInternals;
  try {
    if (c.outgoing && c._client?._protocol && (c.outgoing.state === 'open' || c.outgoing.state === 'eof')) {
      c._client._protocol.signal(c.outgoing.id, name);
    } else {
      ch.signal(name);
    }
  } catch {
    /* channel or connection already gone */
  }
}

/** Host, user and key from configuration; every gap is a ToolError naming the variable to set. */
export function sshTarget(config: SshConfig): SshTarget {
  const rawHost = config.CHAT_CODING_REMOTE_HOST;
  if (!rawHost) throw new ToolError('remote tools are not configured: set CHAT_CODING_REMOTE_HOST');
  const at = rawHost.lastIndexOf('@');
  // An IPv6 literal may be written in brackets (user@[::1]); ssh2 wants the bare address.
  const host = (at >= 0 ? rawHost.slice(at + 1) : rawHost).replace(/^\[(.*)\]$/, '$1');
  const username = at >= 0 ? rawHost.slice(0, at) : config.CHAT_CODING_REMOTE_USER;
  if (!host) throw new ToolError(`CHAT_CODING_REMOTE_HOST "${rawHost}" has no host name`);
  if (!username) {
    throw new ToolError(
      'remote tools are not configured: no SSH user (write CHAT_CODING_REMOTE_HOST as user@host or set CHAT_CODING_REMOTE_USER)',
    );
  }
  const pinned = config.CHAT_CODING_SSH_HOST_KEY_SHA256?.replace(/^SHA256:/, '').replace(/=+$/, '') ?? null;
  const maxHandshakes = handshakesPerThread(config.CHAT_CODING_SSH_MAX_HANDSHAKES, config.actorThreads);
  return { host, port: config.CHAT_CODING_REMOTE_PORT, username, privateKey: loadKey(config), hostKeySha256: pinned, maxHandshakes };
}

function loadKey(config: SshConfig): Buffer {
  let key: Buffer;
  let source: string;
  if (config.CHAT_CODING_SSH_KEY_PATH) {
    source = 'CHAT_CODING_SSH_KEY_PATH';
    try {
      key = readFileSync(config.CHAT_CODING_SSH_KEY_PATH);
    } catch (err) {
      throw new ToolError(`cannot read the SSH key at CHAT_CODING_SSH_KEY_PATH (${config.CHAT_CODING_SSH_KEY_PATH}): ${messageOf(err)}`);
    }
  } else if (config.CHAT_CODING_SSH_PRIVATE_KEY_B64) {
    source = 'CHAT_CODING_SSH_PRIVATE_KEY_B64';
    key = Buffer.from(config.CHAT_CODING_SSH_PRIVATE_KEY_B64, 'base64');
  } else {
    throw new ToolError(
      'remote tools are not configured: no SSH private key (set CHAT_CODING_SSH_KEY_PATH, or CHAT_CODING_SSH_PRIVATE_KEY_B64)',
    );
  }
  // Parse here so a bad key gets a message naming its variable instead of ssh2's generic one.
  const parsed = ssh2().utils.parseKey(key);
  if (parsed instanceof Error) {
    throw new ToolError(`the SSH private key from ${source} cannot be used: ${parsed.message} (encrypted keys are not supported)`);
  }
  return key;
}

/** Runs one remote command. `command` is already a complete, quoted remote command line. */
export function runSsh(target: SshTarget, command: string, opts: SshRunOptions): Promise<SshResult> {
  const cap = opts.maxOutputBytes ?? DEFAULT_OUTPUT_BYTES;
  const stdout = new CappedOutput(cap);
  const stderr = new CappedOutput(cap);
  const where = `${target.username}@${target.host}:${target.port}`;
  return new Promise<SshResult>((resolve, reject) => {
    const conn = new (ssh2().Client)();
    let channel: ClientChannel | null = null;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let settled = false;
    let hostKeyMismatch: string | null = null;
    // This call's turn to handshake (handshake-gate.ts), given back once authenticated or ended.
    let handshaking: (() => void) | null = null;
    const handshakeOver = () => {
      handshaking?.();
      handshaking = null;
    };

    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      handshakeOver();
      clearTimeout(timer);
      opts.signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve({ exitCode, exitSignal, stdout, stderr });
    };

    // Ends the remote process: TERM first (`timeout` and shells forward it to the whole process group),
    // then KILL, then close the channel and connection, which also ends it on servers that kill on close.
    let execRequested = false;
    const endWithoutChannel = () => {
      if (!channel) conn.end();
    };
    const stop = () => {
      const ch = channel;
      if (!ch) {
        // The exec is on its way: its callback stops the command once the channel exists. Closing the
        // connection now would not (sshd lets a command without a terminal outlive its connection);
        // it is closed only if the channel never comes (when it does, that stop closes it after KILL).
        if (execRequested) setTimeout(endWithoutChannel, KILL_GRACE_MS).unref();
        else conn.end();
        return;
      }
      sendSignal(ch, 'TERM');
      setTimeout(() => {
        sendSignal(ch, 'KILL');
        try {
          ch.close();
        } catch {
          /* channel already gone */
        }
        conn.end();
      }, KILL_GRACE_MS).unref();
    };

    // A stopped command's output so far goes with the error: the model learns how far it got.
    const stopped = (message: string) => {
      const printed = stdout.total + stderr.total > 0;
      return new ToolError(message, printed ? { output: `output before it was stopped:\n${formatStreams({ stdout, stderr })}` } : undefined);
    };
    const timer = setTimeout(() => {
      finish(stopped(`${opts.tool} timed out after ${opts.timeoutMs} ms (${opts.timeoutVariable}); the remote command was stopped`));
      stop();
    }, opts.timeoutMs);
    const onAbort = () => {
      finish(stopped(`${opts.tool} was cancelled; the remote command was stopped`));
      stop();
    };
    if (opts.signal.aborted) return onAbort();
    opts.signal.addEventListener('abort', onAbort, { once: true });

    conn.on('error', (err) => {
      finish(new ToolError(hostKeyMismatch ?? `SSH connection to ${where} failed: ${err.message}`, { cause: err }));
      conn.end();
    });
    conn.on('close', () => {
      handshakeOver();
      if (!settled) finish(new ToolError(`SSH connection to ${where} closed before the command finished`));
    });
    conn.on('ready', () => {
      handshakeOver();
      execRequested = true;
      conn.exec(command, (err, stream) => {
        if (err) {
          finish(new ToolError(`SSH exec on ${where} failed: ${err.message}`, { cause: err }));
          conn.end();
          return;
        }
        channel = stream;
        if (settled) return stop();
        stream.end(); // stdin: EOF right away
        stream.on('data', (d: Buffer) => stdout.push(d));
        stream.stderr.on('data', (d: Buffer) => stderr.push(d));
        stream.on('exit', (code: number | null, signal?: string) => {
          exitCode = code;
          exitSignal = signal ?? null;
        });
        stream.on('close', () => {
          finish(null);
          conn.end();
        });
      });
    });

    const connectConfig: ConnectConfig = {
      host: target.host,
      port: target.port,
      username: target.username,
      privateKey: target.privateKey,
      readyTimeout: Math.min(20_000, opts.timeoutMs),
      hostVerifier: (key: Buffer) => {
        if (target.hostKeySha256 === null) return true;
        const seen = hostKeyFingerprint(key);
        if (seen === target.hostKeySha256) return true;
        hostKeyMismatch = `SSH host key of ${where} is SHA256:${seen}, not the SHA256:${target.hostKeySha256} that CHAT_CODING_SSH_HOST_KEY_SHA256 expects`;
        return false;
      },
      keepaliveInterval: 15_000,
    };
    // A call that ends (cancelled, past its deadline) while it waits for its turn never connects.
    handshakeTurn(target.host, target.port, target.maxHandshakes, opts.signal).then(
      (release) => {
        if (settled) return release();
        handshaking = release;
        try {
          conn.connect(connectConfig);
        } catch (err) {
          finish(new ToolError(`SSH connection to ${where} failed: ${messageOf(err)}`, { cause: err }));
        }
      },
      () => undefined, // aborted while waiting: onAbort has settled the call
    );
  });
}

/** The tool result text: exit status first (the model should notice failures), then both streams. */
export function formatSshResult(r: SshResult): string {
  const status = r.exitSignal ? `killed by signal ${r.exitSignal}` : `exit code: ${r.exitCode ?? 'unknown'}`;
  return `${status}\n${formatStreams(r)}`;
}

function formatStreams(r: Pick<SshResult, 'stdout' | 'stderr'>): string {
  const section = (name: string, out: CappedOutput) => {
    const text = out.toString();
    const note = out.truncated ? ` (truncated: ${out.total} bytes, middle omitted)` : '';
    return `--- ${name}${note} ---\n${text === '' ? '(empty)' : text.replace(/\n$/, '')}`;
  };
  return `${section('stdout', r.stdout)}\n${section('stderr', r.stderr)}`;
}
