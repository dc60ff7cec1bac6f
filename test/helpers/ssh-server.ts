// A real SSH server for tests (ssh2's Server on 127.0.0.1, random port). It accepts publickey auth for
// one generated client key and one user, and runs `exec` requests locally with `sh -c`, the way sshd
// would: stdin from the channel, exit status back, and the command's process group killed on a
// `signal` request or when the channel or connection closes.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import ssh2, { type ServerChannel } from 'ssh2';

// ssh2 is CommonJS; Node's ESM named-export detection misses some of its exports.
const { Server, utils } = ssh2;

export interface SshExecRecord {
  username: string;
  command: string;
  pid: number | undefined;
  /** Signals received over the channel (`TERM`, `KILL`, …). */
  signals: string[];
  /** Resolves when the local child process has exited. */
  exited: Promise<void>;
}

export interface TestSshServer {
  /** The host key's fingerprint as `ssh-keygen -lf` prints it, `SHA256:` prefix included. */
  hostKeySha256: string;
  host: '127.0.0.1';
  port: number;
  username: string;
  /** OpenSSH-format private key accepted by the server (string). */
  clientPrivateKey: string;
  /** HOME (and starting directory) of the commands the server runs; a fresh temp directory. */
  home: string;
  execs: SshExecRecord[];
  /** Usernames of every authentication attempt, accepted or not. */
  authAttempts: string[];
  /** Connections not yet authenticated (sshd's MaxStartups counts these): now, the most at once, and connections in all. */
  handshakes: { now: number; max: number; total: number };
  /** With `holdAuth`: the accepted authentications waiting for `releaseAuths`. */
  heldAuths(): number;
  /** Lets every held authentication finish; returns how many there were. */
  releaseAuths(): number;
  close(): Promise<void>;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal); // detached: the child leads its own process group
  } catch {
    /* already gone */
  }
}

export interface SshServerOptions {
  /** The one user allowed in (default `tester`). */
  username?: string;
  /** Extra environment for the commands, e.g. a PATH without bash. */
  env?: Record<string, string>;
  /** Holds each accepted authentication until the test calls `releaseAuths` (a slow server, whose handshakes overlap). */
  holdAuth?: boolean;
}

function hostKeySha256(publicKey: string): string {
  const parsed = utils.parseKey(publicKey);
  if (parsed instanceof Error) throw parsed;
  return `SHA256:${createHash('sha256').update(parsed.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
}

/**
 * An ed25519 key pair that ssh2 can read back. ssh2 1.x strips the leading zero bytes of the public
 * key it generates, so about one pair in 256 does not parse (mscdex/ssh2#1390, #1513): one such host
 * key failed a CI run with "Malformed OpenSSH private key". Draw again until both halves parse.
 */
function keyPair(): { private: string; public: string } {
  for (;;) {
    const pair = utils.generateKeyPairSync('ed25519');
    if (!(utils.parseKey(pair.private) instanceof Error) && !(utils.parseKey(pair.public) instanceof Error)) return pair;
  }
}

export async function startSshServer(opts: SshServerOptions = {}): Promise<TestSshServer> {
  const username = opts.username ?? 'tester';
  const hostKey = keyPair();
  const clientKey = keyPair();
  const allowed = utils.parseKey(clientKey.public);
  if (allowed instanceof Error) throw allowed;
  const home = mkdtempSync(join(tmpdir(), 'ssh-home-'));
  const execs: SshExecRecord[] = [];
  const authAttempts: string[] = [];
  const children = new Set<ChildProcess>();
  const handshakes = { now: 0, max: 0, total: 0 };
  const held: Array<() => void> = [];

  const server = new Server({ hostKeys: [hostKey.private] }, (client) => {
    let user = '';
    let handshaking = true;
    handshakes.total++;
    handshakes.max = Math.max(handshakes.max, ++handshakes.now);
    const handshakeOver = () => {
      if (handshaking) handshakes.now--;
      handshaking = false;
    };
    const mine = new Set<ChildProcess>(); // this connection's commands only
    client.on('authentication', (ctx) => {
      authAttempts.push(ctx.username);
      if (ctx.method !== 'publickey' || ctx.username !== username) return ctx.reject(['publickey']);
      const pub = Buffer.from(allowed.getPublicSSH());
      const keyOk =
        ctx.key.algo === allowed.type && ctx.key.data.length === pub.length && timingSafeEqual(ctx.key.data, pub);
      if (!keyOk || (ctx.signature && allowed.verify(ctx.blob!, ctx.signature, ctx.hashAlgo) !== true)) {
        return ctx.reject(['publickey']);
      }
      user = ctx.username;
      // Only the signed attempt is held: the first, unsigned one only asks whether the key would do.
      if (opts.holdAuth && ctx.signature) held.push(() => ctx.accept());
      else ctx.accept();
    });
    client.on('ready', () => {
      handshakeOver();
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        let child: ChildProcess | null = null;
        let record: SshExecRecord | null = null;
        // ssh2's Server ignores channel requests after the client's EOF (sshd does not): undo that so
        // `signal` requests sent after stdin was closed still reach the handler below.
        session.on('eof', () => {
          (session as unknown as { _ending: boolean })._ending = false;
        });
        session.on('signal', (accept, _reject, info) => {
          accept?.();
          record?.signals.push(info.name);
          if (child) killGroup(child, `SIG${info.name}` as NodeJS.Signals);
        });
        session.once('exec', (accept, _reject, info) => {
          const stream: ServerChannel = accept();
          const proc = spawn('/bin/sh', ['-c', info.command], {
            cwd: home,
            env: { ...process.env, HOME: home, ...opts.env },
            detached: true,
            stdio: ['pipe', 'pipe', 'pipe'],
          });
          child = proc;
          children.add(proc);
          mine.add(proc);
          const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
          record = { username: user, command: info.command, pid: proc.pid, signals: [], exited };
          execs.push(record);
          proc.stdin!.on('error', () => {});
          stream.on('data', (d: Buffer) => proc.stdin!.write(d));
          stream.on('end', () => proc.stdin!.end()); // client EOF = stdin closed
          proc.stdout!.on('data', (d: Buffer) => stream.write(d));
          proc.stderr!.on('data', (d: Buffer) => stream.stderr.write(d));
          proc.on('error', (err) => {
            stream.stderr.write(`spawn failed: ${err.message}\n`);
            stream.exit(127);
            stream.end();
          });
          proc.on('close', (code, signal) => {
            children.delete(proc);
            mine.delete(proc);
            try {
              if (signal) stream.exit(signal.replace(/^SIG/, ''), false, '');
              else stream.exit(code ?? 0);
              stream.end();
            } catch {
              /* channel already closed */
            }
          });
          // A closed channel means nobody will read the output: end the command like sshd with a pty would.
          stream.on('close', () => killGroup(proc, 'SIGKILL'));
        });
      });
    });
    client.on('error', () => {});
    client.on('close', () => {
      handshakeOver();
      for (const c of mine) killGroup(c, 'SIGKILL');
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    host: '127.0.0.1',
    port,
    username,
    clientPrivateKey: clientKey.private,
    hostKeySha256: hostKeySha256(hostKey.public),
    home,
    execs,
    authAttempts,
    handshakes,
    heldAuths: () => held.length,
    releaseAuths() {
      const now = held.splice(0);
      for (const accept of now) accept();
      return now.length;
    },
    async close() {
      for (const c of children) killGroup(c, 'SIGKILL');
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(home, { recursive: true, force: true });
    },
  };
}
