// Starts a real VS Code host (code-server, cached outside the clone by scripts/ensure-code-server.sh)
// on a free loopback port, with a throwaway user-data-dir and extensions-dir.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../support/sshd';

export const REPO_ROOT = resolve(__dirname, '../..');

export interface CodeServer {
  readonly port: number;
  readonly url: string;
  readonly userDataDir: string;
  readonly extensionsDir: string;
  readonly logFile: () => string;
  stop(): Promise<void>;
}

export function ensureCodeServer(): string {
  const r = spawnSync('bash', [join(REPO_ROOT, 'scripts/ensure-code-server.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.status !== 0) throw new Error('code-server is not available (scripts/ensure-code-server.sh failed)');
  const dir = r.stdout.trim().split('\n').pop() ?? '';
  const entry = join(dir, 'node_modules/code-server/out/node/entry.js');
  if (!existsSync(entry)) throw new Error(`code-server entry missing at ${entry}`);
  return entry;
}

/** Installs a VSIX into an extensions dir with code-server's own installer. */
export function installVsix(entry: string, vsix: string, extensionsDir: string, userDataDir: string): void {
  const r = spawnSync(process.execPath, [entry, '--extensions-dir', extensionsDir, '--user-data-dir', userDataDir, '--install-extension', vsix, '--force'], {
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`installing ${vsix} failed: ${r.stdout}\n${r.stderr}`);
}

export interface StartOptions {
  readonly folder: string;
  readonly env?: NodeJS.ProcessEnv;
  readonly extensionsDir?: string;
  readonly userDataDir?: string;
  readonly settings?: Record<string, unknown>;
  readonly port?: number;
  readonly host?: string;
  /** Keep code-server's output on the console (the demo) instead of a log file. */
  readonly inheritOutput?: boolean;
  /** Workspace trust on, without any prompt: the folder opens untrusted (Restricted Mode), as a cloned repo would. */
  readonly untrusted?: boolean;
}

export async function startCodeServer(entry: string, opts: StartOptions): Promise<CodeServer> {
  const base = mkdtempSync(join(tmpdir(), 'rft-cs-'));
  const userDataDir = opts.userDataDir ?? join(base, 'user');
  const extensionsDir = opts.extensionsDir ?? join(base, 'extensions');
  mkdirSync(join(userDataDir, 'User'), { recursive: true });
  mkdirSync(extensionsDir, { recursive: true });
  // A test run refuses dialogs, so workspace trust must not ask: it is off, or on with every prompt off.
  const trust = opts.untrusted
    ? { 'security.workspace.trust.enabled': true, 'security.workspace.trust.startupPrompt': 'never', 'security.workspace.trust.banner': 'never' }
    : { 'security.workspace.trust.enabled': false };
  const settings = {
    ...trust,
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'extensions.ignoreRecommendations': true,
    'telemetry.telemetryLevel': 'off',
    'update.mode': 'none',
    ...opts.settings,
  };
  writeFileSync(join(userDataDir, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  const port = opts.port ?? (await freePort());
  const host = opts.host ?? '127.0.0.1';
  const logPath = join(base, 'code-server.log');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      entry,
      '--auth',
      'none',
      '--bind-addr',
      `${host}:${port}`,
      '--disable-telemetry',
      '--disable-update-check',
      ...(opts.untrusted ? [] : ['--disable-workspace-trust']),
      '--user-data-dir',
      userDataDir,
      '--extensions-dir',
      extensionsDir,
      opts.folder,
    ],
    { env: { ...process.env, ...opts.env }, stdio: opts.inheritOutput ? 'inherit' : ['ignore', 'pipe', 'pipe'] },
  );
  const logChunks: string[] = [];
  child.stdout?.on('data', (d: Buffer) => logChunks.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => logChunks.push(d.toString()));
  const url = `http://${host}:${port}/`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`code-server exited early (${child.exitCode}):\n${logChunks.join('')}`);
    try {
      const res = await fetch(`${url}healthz`);
      if (res.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`code-server did not answer on ${url}:\n${logChunks.join('')}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    port,
    url,
    userDataDir,
    extensionsDir,
    logFile: () => {
      writeFileSync(logPath, logChunks.join(''));
      return logPath;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
