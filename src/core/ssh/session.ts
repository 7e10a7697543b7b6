// One authenticated SSH connection (ssh2), reached the way OpenSSH would reach it: ssh_config options,
// ProxyJump hops, authentication in OpenSSH's order (auth.ts), keepalive, host keys checked against
// known_hosts plus the extension's own store before any credential is sent, and the login shell probed so
// every command is parsed as POSIX sh (loginShell.ts).
import { homedir } from 'node:os';
import type { Readable } from 'node:stream';
import { loadSsh2 } from './ssh2Module';
import type { SshModule } from './ssh2Module';
import type { CipherAlgorithm, Client, ClientChannel, SFTPWrapper, ServerHostKeyAlgorithm } from 'ssh2';
import { resolveHost } from './sshConfig';
import { authHandlerFor } from './auth';
import type { AuthOptions, SecretPrompt } from './auth';
import { expandProxyCommand, startProxyCommand } from './proxyCommand';
import { connectCoalescing } from './coalescingSocket';
import { HandshakeTimer } from './handshakeTimer';
import { detectLoginShell, noisyShellMessage, viaPosixShell } from './loginShell';
import type { LoginShell, ShellProbe } from './loginShell';
import { checkedRemoteHome } from './remoteHome';
import type { ProxySocket } from './proxyCommand';
import type { ResolvedHost } from './sshConfig';
import { DEFAULT_COMMAND_OUTPUT_BYTES, DEFAULT_COMMAND_TIMEOUT_MS, noAnswerError, tooMuchOutputError } from './commandLimits';
import type { CommandLimits } from './commandLimits';
import {
  certAuthorityFor,
  checkHostKey,
  changedHostKeyMessage,
  fingerprintSha256,
  hostKeyAction,
  keyTypeOf,
  rememberHostKey,
  knownHostsName,
  preferKeyTypes,
  preferKnownHostKeyAlgorithms,
} from './knownHostsFile';

/** Where to connect: an ssh_config alias, or "[user@]host[:port]" with optional overrides. */
export interface SshTarget {
  readonly host: string;
  readonly user?: string;
  /** User when ssh_config names none for this host (a cloud image's user: ubuntu, ec2-user); `user` always wins. */
  readonly defaultUser?: string;
  readonly port?: number;
  /** Used before the ones ssh_config names. */
  readonly identityFile?: string;
  /**
   * The name the host key is recorded under, as ssh_config's HostKeyAlias (which wins if set). Provisioned
   * instances use one per instance id: a cloud recycles addresses, and a new instance on an old address is a
   * new host, not a "changed key".
   */
  readonly hostKeyAlias?: string;
  /**
   * Host keys known in advance for this target ("type base64" lines): a key the extension generated and put in
   * the instance's user-data, or one the provider published. Only these are accepted; nothing is asked.
   */
  readonly pinnedHostKeys?: readonly string[];
}

export interface HostKeyPrompt {
  readonly host: string;
  readonly port: number;
  readonly keyType: string;
  readonly fingerprint: string;
  /** A known_hosts file whose @cert-authority covers the host (host certificates cannot be checked here). */
  readonly certAuthorityFile?: string;
}

/** Authentication (agent, keys, passphrases, passwords and keyboard-interactive answers) is in auth.ts. */
export interface ConnectOptions extends AuthOptions {
  /** ssh config file; defaults to ~/.ssh/config. */
  readonly sshConfigPath?: string;
  /** The extension's own known-hosts store (written when the user accepts a key). Required: keys are never accepted silently. */
  readonly hostKeyStore: string;
  /** Overrides the known_hosts files from ssh_config (tests point these at temp files). */
  readonly knownHostsFiles?: readonly string[];
  /** Overrides GlobalKnownHostsFile (tests; default: the ssh_config value, else /etc/ssh/ssh_known_hosts{,2}). */
  readonly globalKnownHostsFiles?: readonly string[];
  /** Asked once per unknown host key; true accepts and remembers it in hostKeyStore. Absent means refuse. */
  readonly confirmHostKey?: (prompt: HostKeyPrompt) => Promise<boolean>;
  /** Keepalive period; default min(ServerAliveInterval, 7 s): with 2 unanswered probes allowed a dead link is dropped within ~21 s. */
  readonly keepaliveIntervalMs?: number;
  readonly keepaliveCountMax?: number;
  readonly readyTimeoutMs?: number;
  readonly signal?: AbortSignal;
  /**
   * false: resolve as soon as the connection is authenticated, with the login-shell probe still running. The
   * first commands then start beside it (saving its two round trips, 80 ms over a 40 ms link), and a noisy
   * shell fails them instead of the connect. Default true.
   */
  readonly awaitShellProbe?: boolean;
}

/** A failure that retrying cannot fix (host key refused or changed, authentication rejected, a noisy login shell). */
export class SshFatalError extends Error {
  constructor(
    message: string,
    readonly code: 'host-key-changed' | 'host-key-rejected' | 'host-key-revoked' | 'auth-failed' | 'config' | 'shell-noise',
  ) {
    super(message);
    this.name = 'SshFatalError';
  }
}

export interface ExecResult {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: Buffer;
  readonly stderr: Buffer;
}

/** Time limit, output cap and what the command does (for messages): commandLimits.ts, whose defaults apply. */
export interface ExecOptions extends CommandLimits {
  /** Written to the command's stdin, then stdin is closed. */
  readonly stdin?: Buffer | string | Readable;
  readonly signal?: AbortSignal;
}

const negotiatedCiphers = new WeakMap<Client, string>();
/** Each connection's round trip as its handshake showed it (see connectHop). */
const handshakeRtts = new WeakMap<Client, number>();

/** The ciphers this ssh2 build can use (it drops chacha20-poly1305 where neither its addon nor Node has it). */
function ssh2Ciphers(): readonly string[] {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('ssh2/lib/protocol/constants.js') as { SUPPORTED_CIPHER: string[] }).SUPPORTED_CIPHER;
}

/** ssh2's default host key algorithms (Node 20 has Ed25519), reordered per host by preferKnownHostKeyAlgorithms. */
const SSH2_HOST_KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
] as const;

interface ExitRecord {
  status?: { code: number | null; signal: string | null };
  notify?: () => void;
}
const exitRecords = new WeakMap<ClientChannel, ExitRecord>();

export class SshSession {
  private sftpPromise: Promise<SFTPWrapper> | undefined;
  private homePromise: Promise<string> | undefined;
  private isClosed = false;
  private readonly closeListeners = new Set<(err?: Error) => void>();

  /** The client-to-server cipher negotiated for this connection (e.g. aes128-gcm@openssh.com). */
  get cipher(): string | undefined {
    return negotiatedCiphers.get(this.client);
  }

  /**
   * A sibling connection to the same host, for channels beyond the server's MaxSessions (10 by default in
   * OpenSSH: a few followed runs hold three tails each, plus SFTP and the GPU sampler). Set by SshHost.
   */
  overflow: (() => Promise<SshSession>) | undefined;

  /** The probe's verdict once it is in; until then commands travel in the form every shell passes on. */
  private shellKnown: LoginShell | undefined;
  /**
   * Settles when the login-shell probe does (loginShell.ts): rejects with SshFatalError('shell-noise') when the
   * shell prints on start-up, after closing the connection. Commands opened before that are sent at once but
   * handed to their caller only after it: their output cannot be trusted sooner.
   */
  readonly verified: Promise<void>;

  constructor(
    readonly client: Client,
    readonly resolved: ResolvedHost,
    private readonly hops: ReadonlyArray<{ end(): void }>,
    /** The login-shell probe: its outcome, or the probe still running (then `verified` says when it is done). */
    probe: ShellProbe | Promise<ShellProbe>,
    /**
     * Round trip to the host as the handshake showed it, for choices that depend on the link: how many streams
     * a large sync uses. Undefined when not measured.
     */
    readonly rttMs?: number,
  ) {
    let probedHome: string | undefined;
    const settle = (p: ShellProbe): void => {
      if (p.noise !== undefined) {
        const err = new SshFatalError(noisyShellMessage(resolved.alias, p.noise), 'shell-noise');
        this.close();
        throw err;
      }
      this.shellKnown = p.shell;
      probedHome = p.home;
    };
    if (probe instanceof Promise) {
      this.verified = probe.then(settle);
      // Asked for before the probe is in: the probe's own $HOME when it has one, else a command of its own.
      this.homePromise = this.verified.then(() => probedHome ?? this.askHome());
      // Unobserved here: whoever runs a command sees the failure.
      this.verified.catch(() => undefined);
      this.homePromise.catch(() => undefined);
    } else {
      settle(probe);
      this.verified = Promise.resolve();
      if (probedHome !== undefined) this.homePromise = Promise.resolve(probedHome);
    }
    const onClose = (): void => this.markClosed();
    client.once('close', onClose);
    client.on('error', (err: Error) => this.markClosed(err));
  }

  /** How the login shell parses commands (loginShell.ts); 'other' routes each one through /bin/sh. Undefined while the probe runs. */
  get loginShell(): LoginShell | undefined {
    return this.shellKnown;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Called once when the connection ends for any reason. Returns an unsubscribe function. */
  onClose(listener: (err?: Error) => void): () => void {
    if (this.isClosed) {
      listener();
      return () => undefined;
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  private markClosed(err?: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const l of this.closeListeners) l(err);
    this.closeListeners.clear();
    for (const h of this.hops) h.end();
  }

  /** Opens an exec channel. The command must have been built with shellQuote/shellCommand. */
  async execStream(command: string): Promise<ClientChannel> {
    if (this.isClosed) throw new Error('SSH connection is closed');
    try {
      return await this.openExec(command);
    } catch (err) {
      if (this.overflow && atSessionLimit(err)) return await (await this.overflow()).execStream(command);
      throw err;
    }
  }

  private async openExec(command: string): Promise<ClientChannel> {
    const known = this.shellKnown;
    const ch = await new Promise<ClientChannel>((resolve, reject) => {
      this.client.exec(known === 'posix' ? command : viaPosixShell(command), (err, ch) => {
        if (err) return reject(err);
        // ssh2 may parse the exit-status packet in the same tick as the exec reply, before an awaiting caller
        // runs: record it here, synchronously, or it is lost.
        const record: ExitRecord = {};
        exitRecords.set(ch, record);
        ch.once('exit', (code: number | null, signal?: string) => {
          record.status = { code, signal: signal ?? null };
          record.notify?.();
        });
        resolve(ch);
      });
    });
    if (known !== undefined) return ch;
    // Sent while the probe ran: the channel buffers what the command prints (a stream holds its data until read,
    // and ssh2 emits 'close' only after 'end') until the probe says the output is the command's own.
    try {
      await this.verified;
    } catch (err) {
      ch.close();
      throw err;
    }
    return ch;
  }

  /**
   * Resolves with the channel's exit status. Node's stream machinery may emit 'close' as soon as EOF arrives,
   * before the exit-status packet that follows it, so a close without a status waits for the status or for the
   * connection to end (then undefined: the command's fate is unknown).
   */
  exitOf(ch: ClientChannel): Promise<{ code: number | null; signal: string | null } | undefined> {
    return new Promise((resolve) => {
      let done = false;
      let timer: NodeJS.Timeout | undefined;
      let unsubscribe = (): void => undefined;
      const finish = (v: { code: number | null; signal: string | null } | undefined): void => {
        if (done) return;
        done = true;
        if (timer) clearTimeout(timer);
        unsubscribe();
        resolve(v);
      };
      const record = exitRecords.get(ch);
      if (record?.status) return finish(record.status);
      if (record) record.notify = () => finish(record.status);
      else ch.once('exit', (code: number | null, signal?: string) => finish({ code, signal: signal ?? null }));
      ch.once('close', () => {
        if (done) return;
        unsubscribe = this.onClose(() => finish(undefined));
        timer = setTimeout(() => finish(undefined), 5000);
      });
    });
  }

  /**
   * Runs a command to completion and collects its output, within a time limit and an output cap (a host may
   * answer with silence or with output that never ends): past either the channel is closed and the command fails
   * with a HostCommandError naming the host and `what`.
   */
  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    const what = options.what ?? 'a command';
    const timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    const maxBytes = options.maxOutputBytes ?? DEFAULT_COMMAND_OUTPUT_BYTES;
    return await new Promise((resolve, reject) => {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      let bytes = 0;
      let settled = false;
      let ch: ClientChannel | undefined;
      const settle = (): boolean => {
        if (settled) return false;
        settled = true;
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        return true;
      };
      const fail = (e: unknown): void => {
        if (!settle()) return;
        out.length = 0;
        err.length = 0;
        ch?.close();
        reject(e);
      };
      const onAbort = (): void => fail(new Error('aborted'));
      // Started before the channel is asked for: a host that never opens it is as silent as one that never answers.
      const timer = setTimeout(() => fail(noAnswerError(this.resolved.alias, what, timeoutMs)), timeoutMs);
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      const take =
        (into: Buffer[]) =>
        (d: Buffer): void => {
          if (settled) return;
          bytes += d.length;
          if (bytes > maxBytes) return fail(tooMuchOutputError(this.resolved.alias, what, maxBytes));
          into.push(d);
        };
      this.execStream(command).then((opened) => {
        if (settled) return void opened.close();
        ch = opened;
        const exit = this.exitOf(opened);
        opened.on('data', take(out));
        opened.stderr.on('data', take(err));
        opened.once('close', () => {
          exit.then((status) => {
            if (!settle()) return;
            // No exit status: the connection went away under the command.
            if (!status) reject(new Error(`SSH connection closed during ${what} on ${this.resolved.alias}`));
            else resolve({ code: status.code, signal: status.signal, stdout: Buffer.concat(out), stderr: Buffer.concat(err) });
          }, fail);
        });
        const stdin = options.stdin;
        if (stdin === undefined) opened.end();
        else if (typeof stdin === 'string' || Buffer.isBuffer(stdin)) opened.end(stdin);
        else stdin.pipe(opened);
      }, fail);
    });
  }

  /** Like exec but fails unless the command exits 0; returns stdout as text. */
  async run(command: string, options: ExecOptions = {}): Promise<string> {
    const r = await this.exec(command, options);
    if (r.code !== 0)
      throw new Error(
        `remote command failed (${r.code ?? r.signal})${options.what ? ` on ${this.resolved.alias}, ${options.what}` : ''}: ${r.stderr.toString('utf8').trim().slice(0, 500)}`,
      );
    return r.stdout.toString('utf8');
  }

  async sftp(): Promise<SFTPWrapper> {
    // sshd starts the SFTP server through the login shell too: one that prints on start-up breaks it, and the
    // probe's message says what to fix where SFTP's own error would not.
    await this.verified;
    this.sftpPromise ??= new Promise<SFTPWrapper>((resolve, reject) => {
      this.client.sftp((err, s) => (err ? reject(err) : resolve(s)));
    }).catch(async (err: unknown) => {
      if (this.overflow && atSessionLimit(err)) return await (await this.overflow()).sftp();
      // Not cached: the next call tries again (after the host's admin fixed it, or over a new connection).
      this.sftpPromise = undefined;
      if (this.isClosed) throw err;
      throw new Error(
        `The SFTP subsystem on ${this.resolved.alias} did not start (${(err as Error).message}). Run files and ` +
          "secrets are written over SFTP only (never on a command line): the host's sshd_config needs a `Subsystem sftp` line.",
        { cause: err },
      );
    });
    return await this.sftpPromise;
  }

  /** The remote $HOME, so every later path can be absolute (SFTP does not expand `~`). */
  async home(): Promise<string> {
    this.homePromise ??= this.askHome();
    return await this.homePromise;
  }

  private async askHome(): Promise<string> {
    const h = await this.run(`printf '%s' "$HOME"`, { what: 'reading $HOME', timeoutMs: 60_000, maxOutputBytes: 64 * 1024 });
    return checkedRemoteHome(this.resolved.alias, h);
  }

  close(): void {
    this.client.end();
    this.markClosed();
  }
}

/**
 * OpenSSH refuses a session channel past MaxSessions with "open failed" and reason 2 (SSH2_OPEN_CONNECT_FAILED);
 * nothing else makes a session channel fail that way.
 */
function atSessionLimit(err: unknown): boolean {
  return err instanceof Error && /Channel open failure/.test(err.message) && (err as Error & { reason?: number }).reason === 2;
}

/** Connects one hop; `sock` carries it through the previous hop when there is one. */
async function connectHop(ssh2: SshModule, resolved: ResolvedHost, target: SshTarget, options: ConnectOptions, sock: Readable | undefined): Promise<Client> {
  const home = homedir();
  const client = new ssh2.Client();
  const user = target.user ?? resolved.user;
  const port = target.port ?? resolved.port;
  // OpenSSH looks host keys up by HostName (or HostKeyAlias), never by the alias typed.
  const alias = resolved.hostKeyAlias ?? target.hostKeyAlias?.toLowerCase();
  const keyName = alias ?? resolved.hostName;
  // With HostKeyAlias ssh looks the alias up bare, whatever the port; otherwise "[host]:port" off port 22.
  const keyPort = alias ? 22 : port;
  // As ssh(1): the user files, then the global ones (GlobalKnownHostsFile, /etc/ssh/ssh_known_hosts by default).
  const knownFiles = [
    ...(options.knownHostsFiles ?? resolved.userKnownHostsFiles),
    ...(options.globalKnownHostsFiles ?? resolved.globalKnownHostsFiles),
    options.hostKeyStore,
  ];
  let hostKeyError: Error | undefined;
  const interval = options.keepaliveIntervalMs ?? Math.min(resolved.serverAliveInterval > 0 ? resolved.serverAliveInterval * 1000 : 7_000, 7_000);
  const readyMs = options.readyTimeoutMs ?? 20_000;
  let onTimeout = (): void => undefined;
  const timer = new HandshakeTimer(readyMs, () => onTimeout());
  const { askPassphrase, askSecret } = options;
  // Ciphers from ssh_config, as ssh(1) would offer them, limited to those ssh2 implements (absent: ssh2's order).
  if (resolved.ciphersError) throw new SshFatalError(`${resolved.ciphersError} (ssh_config for ${resolved.alias})`, 'config');
  const offeredCiphers = resolved.ciphers ? resolved.ciphers.filter((c) => ssh2Ciphers().includes(c)) : undefined;
  if (offeredCiphers?.length === 0) {
    throw new SshFatalError(
      `None of the Ciphers in ssh_config for ${resolved.alias} (${resolved.ciphers!.join(',')}) is one this client implements (${ssh2Ciphers().join(',')}).`,
      'config',
    );
  }
  // The cipher both sides agreed on, for the log and for benchmarks that must compare like with like.
  // The round trip is read off the handshake: ssh2 asks for the service right after its first 'handshake'
  // event and calls the auth handler when the server accepts, one round trip with no work on either side.
  let handshakeAt: number | undefined;
  client.once('handshake', (n: { cs?: { cipher?: string } }) => {
    if (n.cs?.cipher) negotiatedCiphers.set(client, n.cs.cipher);
    handshakeAt = performance.now();
  });
  const auth = authHandlerFor(
    ssh2,
    {
      username: user,
      host: keyName,
      port,
      resolved,
      home,
      ...(target.identityFile ? { identityFile: target.identityFile } : {}),
    },
    {
      ...options,
      ...(askPassphrase ? { askPassphrase: (path: string) => timer.pauseWhile(() => askPassphrase(path)) } : {}),
      ...(askSecret ? { askSecret: (p: SecretPrompt) => timer.pauseWhile(() => askSecret(p)) } : {}),
    },
  );
  return await new Promise<Client>((resolve, reject) => {
    let settled = false;
    const fail = (err: Error): void => {
      if (settled) return;
      settled = true;
      timer.stop();
      options.signal?.removeEventListener('abort', onAbort);
      client.end();
      reject(err);
    };
    const onAbort = (): void => fail(new Error('connection cancelled'));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // destroy, not end: a socket still connecting (a host that drops packets) would otherwise linger.
    onTimeout = (): void => {
      client.destroy();
      fail(
        new Error(
          `Timed out after ${readyMs >= 1000 ? `${Math.round(readyMs / 1000)} s` : `${readyMs} ms`} waiting for the SSH handshake with ${resolved.hostName}:${port} (time spent answering prompts not counted).`,
        ),
      );
    };
    client.once('ready', () => {
      if (settled) return;
      settled = true;
      timer.stop();
      auth.succeeded();
      options.signal?.removeEventListener('abort', onAbort);
      resolve(client);
    });
    // `on`, not `once`: a server that gives up can also reset the socket, and a second 'error' with no
    // listener would be thrown at the extension host.
    client.on('error', (err: Error & { level?: string }) => {
      if (hostKeyError) return fail(hostKeyError);
      if (err.level === 'client-authentication')
        return fail(
          new SshFatalError(
            `Authentication as ${user} to ${knownHostsName(resolved.hostName, port)} failed: no key, agent identity, passphrase or password was accepted.`,
            'auth-failed',
          ),
        );
      fail(err);
    });
    client.once('close', () => fail(hostKeyError ?? new Error(`connection to ${resolved.hostName}:${port} closed before it was ready`)));
    client.connect({
      // Our own socket when connecting directly, so that small writes are coalesced (coalescingSocket.ts).
      sock: sock ?? connectCoalescing(resolved.hostName, port),
      username: user,
      // Our HandshakeTimer instead, which does not count the time a prompt waits for the user.
      readyTimeout: 0,
      keepaliveInterval: interval,
      keepaliveCountMax: options.keepaliveCountMax ?? 2,
      algorithms: {
        ...(offeredCiphers ? { cipher: offeredCiphers as CipherAlgorithm[] } : {}),
        serverHostKey: target.pinnedHostKeys?.length
          ? preferKeyTypes<ServerHostKeyAlgorithm>(
              target.pinnedHostKeys.map((l) => l.trim().split(/\s+/)[0] ?? ''),
              SSH2_HOST_KEY_ALGORITHMS,
            )
          : preferKnownHostKeyAlgorithms<ServerHostKeyAlgorithm>(knownFiles, keyName, keyPort, SSH2_HOST_KEY_ALGORITHMS),
      },
      authHandler: (methodsLeft, partial, next) => {
        if (handshakeAt !== undefined && !handshakeRtts.has(client)) handshakeRtts.set(client, performance.now() - handshakeAt);
        auth.handler(methodsLeft, partial, next);
      },
      hostVerifier: (key: Buffer, verify: (ok: boolean) => void): void => {
        const blob = Buffer.from(key);
        const hk = { type: keyTypeOf(blob), blob };
        if (target.pinnedHostKeys && target.pinnedHostKeys.length > 0) {
          const pinned = target.pinnedHostKeys.map((l) => Buffer.from(l.trim().split(/\s+/)[1] ?? '', 'base64'));
          if (pinned.some((b) => b.equals(blob))) {
            if (checkHostKey(knownFiles, keyName, keyPort, hk).kind !== 'known') rememberHostKey(options.hostKeyStore, keyName, keyPort, hk);
            return verify(true);
          }
          hostKeyError = new SshFatalError(
            `Host key ${fingerprintSha256(blob)} of ${knownHostsName(keyName, keyPort)} is not the one this instance was launched with ` +
              `(${pinned.map((b) => fingerprintSha256(b)).join(', ')}). The connection was refused: something other than the instance may be answering at ${resolved.hostName}:${port}.`,
            'host-key-changed',
          );
          return verify(false);
        }
        const verdict = checkHostKey(knownFiles, keyName, keyPort, hk);
        const action = hostKeyAction(verdict.kind, resolved.strictHostKeyChecking);
        if (action === 'accept') return verify(true);
        if (verdict.kind === 'changed') {
          hostKeyError = new SshFatalError(changedHostKeyMessage(keyName, keyPort, verdict), 'host-key-changed');
          return verify(false);
        }
        if (verdict.kind === 'revoked') {
          hostKeyError = new SshFatalError(
            `Host key ${verdict.fingerprint} for ${knownHostsName(keyName, keyPort)} is marked @revoked in ${verdict.file}.`,
            'host-key-revoked',
          );
          return verify(false);
        }
        if (verdict.kind !== 'unknown') return verify(false);
        const ca = certAuthorityFor(knownFiles, keyName, keyPort);
        const caNote = ca
          ? ` ${ca} vouches for it with a @cert-authority, but this client cannot check host certificates: add the host's own key (ssh-keyscan) instead.`
          : '';
        if (action === 'accept-and-remember') {
          options.log?.(
            `StrictHostKeyChecking ${resolved.strictHostKeyChecking}: adding ${hk.type} ${verdict.fingerprint} for ${knownHostsName(keyName, keyPort)}`,
          );
          rememberHostKey(options.hostKeyStore, keyName, keyPort, hk);
          return verify(true);
        }
        const rejected = (why: string): void => {
          hostKeyError = new SshFatalError(
            `Host key ${fingerprintSha256(blob)} for ${knownHostsName(keyName, keyPort)} is not known and ${why}.${caNote}`,
            'host-key-rejected',
          );
          verify(false);
        };
        if (action === 'refuse') return rejected('StrictHostKeyChecking is yes for this host in your ssh_config');
        const ask = options.confirmHostKey;
        if (!ask) return rejected('was not accepted');
        timer
          .pauseWhile(() => ask({ host: keyName, port: keyPort, keyType: hk.type, fingerprint: verdict.fingerprint, ...(ca ? { certAuthorityFile: ca } : {}) }))
          .then(
            (ok) => {
              if (!ok) return rejected('was not accepted');
              rememberHostKey(options.hostKeyStore, keyName, keyPort, hk);
              verify(true);
            },
            () => rejected('was not accepted'),
          );
      },
    });
    // Every remote command is a few small request/reply packets; with Nagle on, each waits out the peer's
    // delayed ACK (~40 ms per exec on Linux). OpenSSH sets TCP_NODELAY too.
    client.setNoDelay(true);
    timer.start();
  });
}

async function forwardTo(client: Client, host: string, port: number): Promise<ClientChannel> {
  return await new Promise((resolve, reject) => {
    client.forwardOut('127.0.0.1', 0, host, port, (err, ch) => (err ? reject(err) : resolve(ch)));
  });
}

/** Opens an authenticated session to `target`, through every ProxyJump hop. */
export async function connect(target: SshTarget, options: ConnectOptions): Promise<SshSession> {
  const ssh2 = await loadSsh2();
  const source = { ...(options.sshConfigPath ? { path: options.sshConfigPath } : {}) };
  const resolved = resolveHost(target.host, { ...source, ...(target.defaultUser ? { defaultUser: target.defaultUser } : {}) });
  const hops: Array<{ end(): void }> = [];
  let sock: Readable | undefined;
  let proxy: ProxySocket | undefined;
  try {
    if (resolved.proxyJump.length === 0 && resolved.proxyCommand) {
      let command: string;
      try {
        command = expandProxyCommand(resolved.proxyCommand, {
          host: resolved.hostName,
          port: target.port ?? resolved.port,
          user: target.user ?? resolved.user,
          alias: resolved.alias,
        });
      } catch (e) {
        throw new SshFatalError((e as Error).message, 'config'); // not a network failure: retrying cannot help
      }
      proxy = startProxyCommand(command, options.log);
      hops.push(proxy);
      sock = proxy.sock;
      options.log?.(`connecting through ProxyCommand for ${resolved.alias}`);
    }
    for (const jump of resolved.proxyJump) {
      const jr = resolveHost(jump, source);
      const hop = await connectHop(ssh2, jr, { host: jump }, options, sock);
      hops.push(hop);
      options.log?.(`connected to jump host ${jr.hostName}:${jr.port}`);
      sock = undefined;
      const next = hops.length < resolved.proxyJump.length ? resolveHost(resolved.proxyJump[hops.length]!, source) : undefined;
      sock = next ? await forwardTo(hop, next.hostName, next.port) : await forwardTo(hop, resolved.hostName, target.port ?? resolved.port);
    }
    const client = await connectHop(ssh2, resolved, target, options, sock);
    options.log?.(`connected to ${resolved.user}@${resolved.hostName}:${target.port ?? resolved.port}`);
    const probe = detectLoginShell(client).then((p) => {
      if (p.noise === undefined && p.shell !== 'posix') options.log?.(`the login shell on ${resolved.alias} is not a POSIX sh; commands go through /bin/sh`);
      return p;
    });
    const session = new SshSession(client, resolved, hops, probe, handshakeRtts.get(client));
    if (options.awaitShellProbe !== false) await session.verified;
    return session;
  } catch (err) {
    const proxyFailure = await proxy?.failure(1000);
    for (const h of hops) h.end();
    throw proxyFailure && !(err instanceof SshFatalError) ? new Error(proxyFailure) : err;
  }
}
