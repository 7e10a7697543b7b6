// Shared setup for the SSH benchmarks: one throwaway OpenSSH sshd on loopback (test/support/sshd.ts), our
// client settings for it, and the OpenSSH command lines (ssh, scp, rsync -e ssh) for the reference tools.
// Like for like: one cipher is pinned on both sides (RFT_BENCH_CIPHER, default aes128-gcm@openssh.com; left
// alone, ssh2 picks AES-GCM and OpenSSH chacha20-poly1305, which measures the ciphers, not the tools). Ours
// reads it from the ssh_config as a user's `Ciphers` line; OpenSSH gets `-o Ciphers=`. Both handshakes are
// checked to have negotiated it before anything is timed, and every verdict line names it.
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startSshd, opensshArgs } from '../../test/support/sshd';
import type { Sshd } from '../../test/support/sshd';
import { clientFor } from '../../test/support/sshClient';
import type { ClientSetup } from '../../test/support/sshClient';
import type { SshHost } from '../../src/core/ssh/reconnect';
import { loadShipped, shippedFields } from './shipped';
import type { Shipped, ShippedBuild } from './shipped';
import { startShapingProxyProcess } from '../../test/support/shapingProxy';
import type { ShapingOptions } from '../../test/support/shapingProxy';

export interface BenchHost {
  readonly sshd: Sshd;
  /** The code measured, built as the VSIX ships it (bench/lib/shipped.ts). */
  readonly shipped: Shipped;
  /** The verdict fields naming that build (ssh2 bundle hash, no native addon). */
  readonly shippedFields: Record<string, string | boolean>;
  readonly client: ClientSetup;
  /** A fresh SshHost (its own connection), as a new extension window would open. */
  newHost(): SshHost;
  /** `ssh` argv (without the program name) up to and including the destination. */
  sshArgv(): string[];
  scpArgv(): string[];
  /** The -e value for rsync. */
  rsyncRsh(): string;
  readonly dest: string;
  /** The shaped link both tools go through, in words (absent: plain loopback). */
  readonly link?: string;
  /** The cipher both sides are pinned to, checked by verifyCipher(). */
  readonly cipher: string;
  /** Connects once with each tool and throws unless both negotiated `cipher`. */
  verifyCipher(): Promise<void>;
  stop(): Promise<void>;
}

/** The code every SSH bench measures (with the ssh2 bundle, whose hash each verdict records). */
export const SSH_CODE: readonly string[] = ['src/core/ssh', 'esbuild.options.mjs'];

/** A command line as a user would type it (arguments with spaces or quotes single-quoted), for the verdict. */
export function commandLine(cmd: string, args: readonly string[]): string {
  return [cmd, ...args].map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}

export const BENCH_CIPHER = process.env.RFT_BENCH_CIPHER ?? 'aes128-gcm@openssh.com';

/**
 * The bench host, reached directly on loopback or, with `wan`, through the shaping proxy (test/support/
 * shapingProxy.ts) by both tools alike: same port, same known_hosts, same cipher.
 */
export async function startBenchHost(opts: { wan?: ShapingOptions } = {}): Promise<BenchHost> {
  const build: ShippedBuild = await loadShipped();
  const ShippedHost = build.code.SshHost;
  const sshd = await startSshd();
  const proxy = opts.wan ? await startShapingProxyProcess({ host: '127.0.0.1', port: sshd.port }, opts.wan) : undefined;
  const cipher = BENCH_CIPHER;
  const client = clientFor(sshd, { alias: 'bench-host', extraConfig: [`  Ciphers ${cipher}`], ...(proxy ? { port: proxy.port } : {}) });
  const direct = opensshArgs(sshd, client.knownHostsPath);
  const base = [...(proxy ? direct.map((a, i) => (direct[i - 1] === '-p' ? String(proxy.port) : a)) : direct), '-o', `Ciphers=${cipher}`];
  const dest = `${sshd.user}@127.0.0.1`;
  const host: BenchHost = {
    sshd,
    shipped: build.code,
    shippedFields: shippedFields(build),
    client,
    dest,
    cipher,
    verifyCipher: async () => {
      const h = new ShippedHost({ host: client.alias }, client.options);
      const ours = (await h.session()).cipher;
      h.close();
      // Asynchronously, like every tool run here (runTool): a blocking spawn would stall the event loop.
      const stderr = await new Promise<string>((resolve) => {
        const child = spawn('ssh', ['-v', ...base, dest, 'true'], { stdio: ['ignore', 'ignore', 'pipe'] });
        let err = '';
        child.stderr.on('data', (d: Buffer) => {
          err += d.toString();
        });
        child.on('close', () => resolve(err));
      });
      const theirs = /kex: client->server cipher: (\S+)/.exec(stderr)?.[1];
      if (ours !== cipher || theirs !== cipher)
        throw new Error(`cipher not pinned: ours negotiated ${ours ?? '?'}, OpenSSH ${theirs ?? '?'}, wanted ${cipher}`);
      console.log(`cipher: ${cipher} on both sides (checked in each tool's handshake)`);
    },
    newHost: (): SshHost => new ShippedHost({ host: client.alias }, client.options),
    sshArgv: () => [...base, `${sshd.user}@127.0.0.1`],
    scpArgv: () => ['-q', ...base.map((a) => (a === '-p' ? '-P' : a))],
    rsyncRsh: () => ['ssh', ...base].join(' '),
    ...(proxy ? { link: `${proxy.options.rttMs} ms RTT, ${proxy.options.bitsPerSecond / 1e6} Mbit/s (shaping proxy)` } : {}),
    stop: async () => {
      await proxy?.close();
      await sshd.stop();
    },
  };
  await host.verifyCipher();
  return host;
}

/** Runs a program to completion; rejects on a non-zero exit. */
export function runTool(cmd: string, args: readonly string[], opts: { stdoutTo?: 'ignore' | 'count'; timeoutMs?: number } = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', opts.stdoutTo === 'count' ? 'pipe' : 'ignore', 'pipe'] });
    const timer = opts.timeoutMs
      ? setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`${cmd} timed out after ${opts.timeoutMs} ms`));
        }, opts.timeoutMs)
      : undefined;
    child.on('exit', () => clearTimeout(timer));
    let bytes = 0;
    let err = '';
    child.stdout?.on('data', (d: Buffer) => {
      bytes += d.length;
    });
    child.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(bytes) : reject(new Error(`${cmd} exited ${code}: ${err.slice(0, 500)}`))));
  });
}

/** Writes `mb` MiB of incompressible bytes to `path`. */
export function makeRandomFile(path: string, mb: number): void {
  const fd = openSync(path, 'w');
  const block = randomBytes(1024 * 1024);
  for (let i = 0; i < mb; i++) {
    block.writeUInt32LE(i, 0);
    writeSync(fd, block);
  }
  closeSync(fd);
}

/**
 * Where the many-file benches keep their trees, the local one and those both tools write on the host: a folder
 * in memory (/dev/shm) where there is one with room, else the temp dir (RFT_BENCH_TREE_ROOT to choose). This
 * VM's root file system is ext4 without a journal, and there ext4's inode allocator steps over every inode freed
 * in the last 60-300 s (recently_deleted() in fs/ext4/ialloc.c, no-journal mode only), one by one: a run that
 * followed a large deletion (earlier trees, other tests' temp dirs) spent its time in the kernel creating files,
 * whichever tool ran (measured here: rsync -a 2.8 s -> 6.7 s, ours 1.9 s -> 3.6 s, for the same 10,000 files
 * over the shaped link). A GPU host's journaled ext4 or xfs has no such step. Both tools write to the same place.
 */
export function benchTreeRoot(prefix: string, needBytes: number): { path: string; where: string; remove(): void } {
  const chosen = process.env.RFT_BENCH_TREE_ROOT;
  const shm = '/dev/shm';
  const inMemory =
    !chosen &&
    existsSync(shm) &&
    (() => {
      const st = statfsSync(shm);
      return st.bavail * st.bsize > needBytes * 1.5;
    })();
  const base = chosen ?? (inMemory ? shm : tmpdir());
  const path = mkdtempSync(join(base, prefix));
  return { path, where: inMemory ? 'memory (/dev/shm)' : base, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** The path makeTree gives file number i. */
export function treeFilePath(root: string, i: number): string {
  return join(root, `pkg${Math.floor(i / 1000)}`, `mod${Math.floor(i / 100) % 10}`, `file_${i}.py`);
}

/** A tree of `files` files totalling about `totalBytes` (sizes vary 0.2×–1.8× the mean), 100 files per folder. */
export function makeTree(root: string, files: number, totalBytes: number): void {
  const mean = totalBytes / files;
  const pool = randomBytes(Math.ceil(mean * 2) + 4096);
  for (let i = 0; i < files; i++) {
    const path = treeFilePath(root, i);
    if (i % 100 === 0) mkdirSync(dirname(path), { recursive: true });
    const size = Math.floor(mean * (0.2 + (1.6 * ((i * 7919) % 1000)) / 1000));
    const fd = openSync(path, 'w');
    writeSync(fd, pool, (i * 31) % 4096, size);
    closeSync(fd);
  }
}
