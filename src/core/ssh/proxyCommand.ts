// ssh_config's ProxyCommand: the connection's bytes go through a local command's stdin/stdout (ssh -W, nc,
// cloudflared, aws ssm start-session …), exactly as OpenSSH runs it: `exec` under /bin/sh with %-tokens.
import { spawn } from 'node:child_process';
import { Duplex } from 'node:stream';

export interface ProxyTokens {
  /** %h: the HostName being reached. */
  readonly host: string;
  /** %p */
  readonly port: number;
  /** %r: the remote user. */
  readonly user: string;
  /** %n: the alias as typed. */
  readonly alias: string;
}

/**
 * OpenSSH's own rules (misc.c valid_hostname/valid_ruser, since 9.6 for CVE-2023-51385): a host or user name
 * with shell metacharacters never reaches a %-expansion. Quoting cannot make that safe, because templates put
 * the tokens inside their own quotes (AWS's SSM one: `sh -c "aws ssm start-session --target %h …"`), where a
 * quoted `$(…)` still runs. cmd.exe on Windows also expands ^ % and !.
 */
export function proxyTokenProblem(kind: 'host' | 'user' | 'alias', value: string, platform: NodeJS.Platform = process.platform): string | undefined {
  const extra = platform === 'win32' ? '^%!' : '';
  if (value.startsWith('-')) return `${kind} name starts with "-"`;
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    const code = c.charCodeAt(0);
    if (code < 0x20 || code === 0x7f) return `${kind} name contains a control character`;
    const bad = kind === 'user' ? `'\`";&<>|(){}${extra}` : `'\`"$\\;&<>|(){},${extra}`;
    if (bad.includes(c)) return `${kind} name contains ${JSON.stringify(c)}`;
    if (kind !== 'user' && /\s/.test(c)) return `${kind} name contains whitespace`;
    if (kind === 'user' && /\s/.test(c) && value[i + 1] === '-') return 'user name has "-" after whitespace';
    if (kind === 'user' && c === '\\' && i === value.length - 1) return 'user name ends with "\\"';
  }
  return undefined;
}

/**
 * Expands %h %p %r %n %% as OpenSSH does: values are refused (an Error naming the character) unless they pass
 * proxyTokenProblem, then substituted as they are, so a template's own quoting works as with ssh.
 */
export function expandProxyCommand(command: string, t: ProxyTokens, platform: NodeJS.Platform = process.platform): string {
  for (const [kind, value, token] of [
    ['host', t.host, '%h'],
    ['user', t.user, '%r'],
    ['alias', t.alias, '%n'],
  ] as const) {
    if (!command.includes(token)) continue;
    const why = proxyTokenProblem(kind, value, platform);
    if (why) throw new Error(`ProxyCommand not run: the ${why} (${JSON.stringify(value)}); OpenSSH refuses such names too`);
  }
  return command.replace(/%([hprn%])/g, (_m, k: string) => {
    switch (k) {
      case 'h':
        return t.host;
      case 'p':
        return String(t.port);
      case 'r':
        return t.user;
      case 'n':
        return t.alias;
      default:
        return '%';
    }
  });
}

export interface ProxySocket {
  readonly sock: Duplex;
  /**
   * Why the command failed, once it has (waits up to `waitMs` for it to exit); undefined while it runs or
   * after a clean exit. The socket usually ends before the exit status arrives, so ssh2 alone would only say
   * "connection lost".
   */
  failure(waitMs: number): Promise<string | undefined>;
  /** Ends the command (the connection is over). */
  end(): void;
}

/** Starts the (already expanded) command; its stdout/stdin become the socket ssh2 speaks over. */
export function startProxyCommand(command: string, log?: (message: string) => void): ProxySocket {
  // Windows has no /bin/sh: cmd.exe runs the line there (Win32-OpenSSH starts it directly; cmd also finds the
  // program on PATH, which Win32-OpenSSH does not).
  const child =
    process.platform === 'win32'
      ? spawn(command, { shell: true, windowsHide: true, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn('/bin/sh', ['-c', `exec ${command}`], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString('utf8')).slice(-2000);
  });
  const sock = Duplex.from({ readable: child.stdout, writable: child.stdin });
  let why: string | undefined;
  const exited = new Promise<void>((resolve) => {
    // A command that cannot start or dies says why; ssh2 sees the socket end with that error.
    const failed = (reason: string): void => {
      const detail = stderr.trim() ? `: ${stderr.trim().split('\n').slice(-3).join(' | ')}` : '';
      why = `ProxyCommand ${reason}${detail}`;
      log?.(why);
      sock.destroy(new Error(why));
      resolve();
    };
    child.on('error', (err) => failed(`could not start (${err.message})`));
    child.on('exit', (code, signal) => {
      if (code !== 0 && signal !== 'SIGTERM') failed(`exited with ${code ?? signal}`);
      else resolve();
    });
  });
  child.stdin.on('error', () => undefined);
  return {
    sock,
    failure: async (waitMs) => {
      await Promise.race([exited, new Promise((r) => setTimeout(r, waitMs).unref())]);
      return why;
    },
    end: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    },
  };
}
