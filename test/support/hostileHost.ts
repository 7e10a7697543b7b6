// A hostile GPU host for tests: an ssh2 Server on loopback that logs the test's key in, answers the login-shell
// probe the way a clean bash host does (so the session trusts it and sends commands as written), and then meets
// each command with whatever attack the test configured for it: silence forever, output that never ends, a
// megabyte with no line end, links in every text field, malformed or huge events, tricky names. A command no
// route matches exits 0 with no output, as a host with nothing to say would.
//
// Its SFTP is a stand-in that says yes to everything (OPEN gets a handle, every other request OK) and keeps
// nothing: it lets a start get past its file writes to the commands under attack.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Connection, ServerChannel } from 'ssh2';
import { loadSsh2 } from '../../src/core/ssh/ssh2Module';
import { LOGIN_SHELL_PROBE } from '../../src/core/ssh/loginShell';
import type { ConnectOptions } from '../../src/core/ssh/session';

/** What the host does with one command; `exec.command` is the command line as the client sent it. */
export type Attack = (ch: ServerChannel, command: string) => void;

export interface Route {
  readonly match: RegExp;
  readonly attack: Attack;
}

export interface HostileHost {
  readonly port: number;
  /** The ssh_config alias the client knows it by: every error must name it. */
  readonly alias: string;
  readonly home: string;
  /** Connection options for src/core/ssh/session.connect, with a private ssh config and known_hosts. */
  readonly options: ConnectOptions;
  /** Every command received, in order (the probe included). */
  readonly commands: string[];
  /** Every command whose channel has closed, in the order they closed. */
  readonly closed: string[];
  /** Meets the login-shell probe with `attack` instead of a clean host's answer (undefined: clean again). */
  setProbe(attack: Attack | undefined): void;
  /** Replaces the routes; the first that matches a command decides its fate. */
  setRoutes(routes: readonly Route[]): void;
  close(): Promise<void>;
}

/** Says nothing and never exits. */
export const silence: Attack = () => undefined;

/** Writes `text` again and again (to stderr with `toStderr`) for as long as the client reads, then stops when the channel closes. */
export function endless(text: string, toStderr = false): Attack {
  return (ch) => {
    const out = toStderr ? ch.stderr : ch;
    const block = Buffer.from(text.repeat(Math.max(1, Math.ceil((32 * 1024) / Math.max(1, text.length)))));
    let open = true;
    ch.on('close', () => (open = false));
    const pump = (): void => {
      while (open) {
        if (!out.write(block)) return void out.once('drain', pump);
      }
    };
    pump();
  };
}

/**
 * After `delayMs`, writes `stdout` in pieces of `chunkBytes` (small pieces are how a host makes line assembly quadratic), then
 * exits with `code`, or with `then: 'silence'` keeps the channel open and says nothing more.
 */
export function reply(
  stdout: string | Buffer,
  opts: { code?: number; stderr?: string; chunkBytes?: number; then?: 'exit' | 'silence'; delayMs?: number } = {},
): Attack {
  return (ch) => {
    if (opts.delayMs) return void setTimeout(() => reply(stdout, { ...opts, delayMs: 0 })(ch, ''), opts.delayMs);
    const data = typeof stdout === 'string' ? Buffer.from(stdout) : stdout;
    const step = opts.chunkBytes ?? 32 * 1024;
    let at = 0;
    let open = true;
    ch.on('close', () => (open = false));
    const pump = (): void => {
      while (open && at < data.length) {
        const piece = data.subarray(at, at + step);
        at += piece.length;
        if (!ch.write(piece)) return void ch.once('drain', pump);
      }
      if (!open || opts.then === 'silence') return;
      if (opts.stderr) ch.stderr.write(opts.stderr);
      ch.exit(opts.code ?? 0);
      ch.end();
    };
    pump();
  };
}

// SFTP packet types (draft-ietf-secsh-filexfer-02, the version OpenSSH speaks).
const SSH_FXP_INIT = 1;
const SSH_FXP_VERSION = 2;
const SSH_FXP_OPEN = 3;
const SSH_FXP_STATUS = 101;
const SSH_FXP_HANDLE = 102;

function sftpString(s: string | Buffer): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s) : s;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(b.length);
  return Buffer.concat([len, b]);
}

function sftpPacket(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt32BE(body.length + 1);
  head[4] = type;
  return Buffer.concat([head, body]);
}

/** The yes-to-everything SFTP: advertises posix-rename (writeFileAtomic uses it), hands out handles, keeps nothing. */
function agreeableSftp(ch: ServerChannel): void {
  let buf = Buffer.alloc(0);
  ch.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 5 && buf.length >= 4 + buf.readUInt32BE(0)) {
      const len = buf.readUInt32BE(0);
      const type = buf[4]!;
      const packet = buf.subarray(5, 4 + len);
      buf = buf.subarray(4 + len);
      if (type === SSH_FXP_INIT) {
        const version = Buffer.alloc(4);
        version.writeUInt32BE(3);
        ch.write(sftpPacket(SSH_FXP_VERSION, Buffer.concat([version, sftpString('posix-rename@openssh.com'), sftpString('1')])));
        continue;
      }
      const reqid = packet.subarray(0, 4);
      if (type === SSH_FXP_OPEN) ch.write(sftpPacket(SSH_FXP_HANDLE, Buffer.concat([reqid, sftpString('h')])));
      else ch.write(sftpPacket(SSH_FXP_STATUS, Buffer.concat([reqid, Buffer.alloc(4), sftpString('OK'), sftpString('')])));
    }
  });
}

export async function startHostileHost(routes: readonly Route[] = [], opts: { alias?: string; home?: string } = {}): Promise<HostileHost> {
  const { Server, utils } = await loadSsh2();
  const dir = mkdtempSync(join(tmpdir(), 'rft-hostile-'));
  const hostKey = utils.generateKeyPairSync('ed25519');
  const userKey = utils.generateKeyPairSync('ed25519');
  const userKeyPath = join(dir, 'user_key');
  writeFileSync(userKeyPath, userKey.private, { mode: 0o600 });
  const allowed = utils.parseKey(userKey.public);
  if (allowed instanceof Error) throw allowed;
  const alias = opts.alias ?? 'hostile-gpu';
  const home = opts.home ?? '/home/hostile';
  let current: readonly Route[] = routes;
  const commands: string[] = [];
  const closed: string[] = [];
  let probeAttack: Attack | undefined;
  const connections = new Set<Connection>();

  const server = new Server({ hostKeys: [hostKey.private] }, (client) => {
    connections.add(client);
    client.on('close', () => connections.delete(client));
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      if (ctx.method !== 'publickey' || ctx.key.algo !== allowed.type || !ctx.key.data.equals(allowed.getPublicSSH())) return ctx.reject(['publickey']);
      // Without a signature the client only asks whether this key would do.
      if (!ctx.signature || !ctx.blob) return ctx.accept();
      return allowed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true ? ctx.accept() : ctx.reject(['publickey']);
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('env', (accept) => accept?.());
        session.on('subsystem', (accept, reject, info) => (info.name === 'sftp' ? agreeableSftp(accept()) : reject()));
        session.on('exec', (accept, _reject, info) => {
          const ch = accept();
          ch.on('error', () => undefined);
          commands.push(info.command);
          // Flowing, so the channel's end (and its 'close') is seen when the client closes it.
          ch.resume();
          ch.on('close', () => closed.push(info.command));
          if (info.command === LOGIN_SHELL_PROBE) return (probeAttack ?? reply(`rft-sh 42 \nrft-home ${home}\n`))(ch, info.command);
          const route = current.find((r) => r.match.test(info.command));
          (route?.attack ?? reply(''))(ch, info.command);
        });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const sshConfigPath = join(dir, 'config');
  writeFileSync(
    sshConfigPath,
    [`Host ${alias}`, '  HostName 127.0.0.1', `  Port ${port}`, '  User rft', `  IdentityFile ${userKeyPath}`, '  IdentitiesOnly yes', ''].join('\n'),
  );
  const knownHostsPath = join(dir, 'known_hosts');
  writeFileSync(knownHostsPath, `[127.0.0.1]:${port} ${hostKey.public.split(' ').slice(0, 2).join(' ')}\n`);

  return {
    port,
    alias,
    home,
    commands,
    closed,
    options: { sshConfigPath, knownHostsFiles: [knownHostsPath], globalKnownHostsFiles: [], hostKeyStore: join(dir, 'rft_known_hosts'), agentSocket: null },
    setRoutes(next) {
      current = next;
    },
    setProbe(attack) {
      probeAttack = attack;
    },
    async close() {
      for (const c of connections) c.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
