// A throwaway OpenSSH server on loopback for integration tests and benchmarks (recipe: ../shared/TESTBED.md).
// Each instance gets its own temp dir, host key, user key and HOME (via SetEnv), so parallel tests and other
// helpers' sshds never share remote state. Only processes this module started are ever signalled.
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, chmodSync, rmSync, existsSync, readdirSync, appendFileSync } from 'node:fs';
import { createServer, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stopHostDaemonsUnder } from './hostDaemons';

export interface SshdOptions {
  /** Listen on this port (e.g. the port of a stopped sshd, to present a different host key there). */
  readonly port?: number;
  /** Reuse an existing host key instead of generating one. */
  readonly hostKeyPath?: string;
  /** Extra environment for sessions (sshd_config SetEnv); HOME and PATH are set by default. */
  readonly env?: Readonly<Record<string, string>>;
  /** Directories put first on the sessions' PATH (e.g. one holding an nvidia-smi stand-in). */
  readonly pathPrepend?: readonly string[];
  /** Extra sshd_config lines. */
  readonly extraConfig?: readonly string[];
  /** Public keys (OpenSSH one-line format) authorized besides the generated user key. */
  readonly authorizedKeys?: readonly string[];
  /** Listen on this loopback address instead of 127.0.0.1 (an instance that came back under a new address). */
  readonly listenAddress?: string;
  /** Run inside this network namespace (`ip netns exec`), listening on `address` there (netns.ts). */
  readonly netns?: { readonly name: string; readonly address: string };
}

export interface Sshd {
  /** Where it listens: loopback, or a network namespace's own address. */
  readonly host: string;
  readonly port: number;
  /** User name to log in as (the user running the tests). */
  readonly user: string;
  /** Private key (unencrypted ed25519) accepted by this server. */
  readonly userKeyPath: string;
  readonly hostKeyPath: string;
  /** "SHA256:…" as ssh-keygen -lf prints it. */
  readonly hostKeyFingerprint: string;
  /** A known_hosts line for this server: "[127.0.0.1]:port ssh-ed25519 AAAA…". */
  readonly knownHostsLine: string;
  /** The remote HOME of sessions on this server (a private temp dir). */
  readonly home: string;
  /**
   * Where the power-off stand-in writes a line each time it is run. The host is this machine: sessions get
   * RFT_POWEROFF_CMD pointing at the stand-in, so a watchdog that did decide to power off never runs shutdown.
   */
  readonly poweroffLog: string;
  /** The server's own temp dir (config, keys, log). */
  readonly dir: string;
  readonly pid: number;
  authorize(publicKeyLine: string): void;
  /** SIGKILLs every per-connection sshd process (not the listener, not jobs the sessions started). Returns how many. */
  killConnectionChildren(): number;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export function sshKeygen(path: string, passphrase = '', comment = 'rft-test'): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', passphrase, '-C', comment, '-f', path], { stdio: 'ignore' });
}

export function fingerprintOf(pubKeyPath: string): string {
  const out = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', pubKeyPath], { encoding: 'utf8' });
  const m = /(SHA256:\S+)/.exec(out);
  if (!m?.[1]) throw new Error(`no fingerprint in ${out}`);
  return m[1];
}

function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(name));
      children.set(ppid, list);
    } catch {
      /* process exited while scanning */
    }
  }
  const out: number[] = [];
  const stack = [...(children.get(pid) ?? [])];
  while (stack.length > 0) {
    const p = stack.pop()!;
    out.push(p);
    stack.push(...(children.get(p) ?? []));
  }
  return out;
}

function commOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

async function waitForBanner(port: number, child: ChildProcess, logPath: string, timeoutMs = 10_000, address = '127.0.0.1'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`sshd exited ${child.exitCode}: ${existsSync(logPath) ? readFileSync(logPath, 'utf8') : ''}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = netConnect(port, address);
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString('latin1').startsWith('SSH-'));
      });
      s.once('error', () => resolve(false));
      s.setTimeout(1000, () => {
        s.destroy();
        resolve(false);
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd on ${port} did not come up: ${existsSync(logPath) ? readFileSync(logPath, 'utf8') : ''}`);
}

export async function startSshd(options: SshdOptions = {}): Promise<Sshd> {
  const dir = mkdtempSync(join(tmpdir(), 'rft-sshd-'));
  const home = join(dir, 'home');
  mkdirSync(home, { recursive: true });
  const hostKeyPath = join(dir, 'host_key');
  if (options.hostKeyPath) {
    writeFileSync(hostKeyPath, readFileSync(options.hostKeyPath), { mode: 0o600 });
    writeFileSync(`${hostKeyPath}.pub`, readFileSync(`${options.hostKeyPath}.pub`));
  } else {
    sshKeygen(hostKeyPath, '', 'rft-test-host');
  }
  const userKeyPath = join(dir, 'user_key');
  sshKeygen(userKeyPath);
  const authorizedKeysPath = join(dir, 'authorized_keys');
  writeFileSync(authorizedKeysPath, [readFileSync(`${userKeyPath}.pub`, 'utf8').trim(), ...(options.authorizedKeys ?? [])].join('\n') + '\n');
  chmodSync(authorizedKeysPath, 0o600);
  mkdirSync('/run/sshd', { recursive: true });
  // In its own namespace the server has every port to itself.
  const port = options.port ?? (options.netns ? 22 : await freePort());
  const address = options.netns?.address ?? options.listenAddress ?? '127.0.0.1';
  const path = [...(options.pathPrepend ?? []), '/usr/local/bin', '/usr/bin', '/bin'].join(':');
  const poweroffLog = join(dir, 'poweroff-standin.log');
  const poweroffStandIn = join(dir, 'poweroff-standin');
  writeFileSync(poweroffStandIn, `#!/bin/sh\n# stand-in for shutdown -h now on the test host (which is this machine)\ndate +%s >> '${poweroffLog}'\n`, {
    mode: 0o755,
  });
  const env: Record<string, string> = { HOME: home, PATH: path, RFT_POWEROFF_CMD: poweroffStandIn, ...(options.env ?? {}) };
  const setEnv = Object.entries(env)
    .map(([k, v]) => `"${k}=${v}"`)
    .join(' ');
  const logPath = join(dir, 'sshd.log');
  const config = [
    `Port ${port}`,
    `ListenAddress ${address}`,
    `HostKey ${hostKeyPath}`,
    `AuthorizedKeysFile ${authorizedKeysPath}`,
    'PasswordAuthentication no',
    'KbdInteractiveAuthentication no',
    'PermitRootLogin prohibit-password',
    'StrictModes no',
    'UsePAM no',
    'AllowTcpForwarding yes',
    'MaxStartups 100:30:200',
    'MaxSessions 10',
    `PidFile ${join(dir, 'sshd.pid')}`,
    'Subsystem sftp internal-sftp',
    `SetEnv ${setEnv}`,
  ];
  // sshd keeps the first value of most keywords: an extra line for one set above (PasswordAuthentication,
  // UsePAM …) replaces it. HostKey and SetEnv add to what is there.
  const extra = options.extraConfig ?? [];
  const overridden = new Set(extra.map((l) => l.trim().split(/\s+/)[0]!.toLowerCase()).filter((k) => k !== 'hostkey' && k !== 'setenv'));
  config.splice(0, config.length, ...config.filter((l) => !overridden.has(l.split(/\s+/)[0]!.toLowerCase())), ...extra);
  const configPath = join(dir, 'sshd_config');
  writeFileSync(configPath, config.join('\n') + '\n');
  const sshdArgv = [process.env.SSHD_PATH ?? '/usr/sbin/sshd', '-D', '-f', configPath, '-E', logPath];
  // `ip netns exec` execs sshd in place (same pid), so stop() and the leftover check see sshd itself.
  const argv = options.netns ? ['ip', 'netns', 'exec', options.netns.name, ...sshdArgv] : sshdArgv;
  const child = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
  await waitForBanner(port, child, logPath, 10_000, address);
  const pid = child.pid!;
  const pub = readFileSync(`${hostKeyPath}.pub`, 'utf8').trim().split(/\s+/);
  const knownHostsLine = `${port === 22 ? address : `[${address}]:${port}`} ${pub[0]} ${pub[1]}`;
  const user = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
  let stopped = false;
  return {
    host: address,
    port,
    user,
    userKeyPath,
    hostKeyPath,
    hostKeyFingerprint: fingerprintOf(`${hostKeyPath}.pub`),
    knownHostsLine,
    home,
    poweroffLog,
    dir,
    pid,
    authorize(line: string): void {
      appendFileSync(authorizedKeysPath, line.trim() + '\n');
    },
    killConnectionChildren(): number {
      let n = 0;
      for (const p of descendants(pid)) {
        const comm = commOf(p);
        if (comm === 'sshd' || comm === 'sshd-session') {
          try {
            process.kill(p, 'SIGKILL');
            n++;
          } catch {
            /* already gone */
          }
        }
      }
      return n;
    },
    async stop(): Promise<void> {
      if (stopped) return;
      stopped = true;
      // Connection children first, so the port is free for a successor right after stop() resolves.
      for (const p of descendants(pid)) {
        const comm = commOf(p);
        if (comm === 'sshd' || comm === 'sshd-session') {
          try {
            process.kill(p, 'SIGKILL');
          } catch {
            /* gone */
          }
        }
      }
      if (child.exitCode === null) {
        const exited = new Promise<void>((r) => child.once('exit', () => r()));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
      }
      await stopHostDaemonsUnder(dir);
      // RFT_KEEP_SSHD=1 keeps the server's dir (config, sshd.log, HOME) for a post-mortem.
      if (process.env.RFT_KEEP_SSHD !== '1') {
        try {
          rmSync(dir, { recursive: true, force: true });
        } catch {
          /* leftover files of detached jobs */
        }
      }
    },
  };
}

/** Runs OpenSSH's own client against a started sshd (for reference measurements and cross-checks). */
export function opensshArgs(sshd: Sshd, knownHostsPath: string): string[] {
  return [
    '-p',
    String(sshd.port),
    '-i',
    sshd.userKeyPath,
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    `UserKnownHostsFile=${knownHostsPath}`,
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'BatchMode=yes',
    '-o',
    'LogLevel=ERROR',
    '-F',
    '/dev/null',
  ];
}
