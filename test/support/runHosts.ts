// What the run lifecycle's integration tests share: connect options that trust the given test sshds (a
// private known_hosts and host-key store, no agent, no ssh_config), a RunManager over a temp storage folder
// with the real python-runner and sync, and a promise for a run's end.
import { cpSync, existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { before, after } from 'node:test';
import { startSshd } from './sshd';
import type { Sshd } from './sshd';
import type { ConnectOptions } from '../../src/core/ssh/session';
import { RunStore } from '../../src/core/runs/store/runStore';
import { RunManager } from '../../src/core/runs/lifecycle/runManager';
import type { RunFinished, RunManagerDeps } from '../../src/core/runs/lifecycle/runManager';

type StartRequest = Parameters<RunManager['start']>[0];
import { Ledger } from '../../src/core/runs/store/ledger';
import { sshSync } from '../../src/core/runs/sync/runSync';

const REPO = resolve(__dirname, '../..');

export function trustingConnectOptions(sshds: readonly Sshd[]): ConnectOptions {
  const dir = mkdtempSync(join(tmpdir(), 'rft-trust-'));
  const knownHosts = join(dir, 'known_hosts');
  writeFileSync(knownHosts, sshds.map((s) => `${s.knownHostsLine}\n`).join(''));
  return { hostKeyStore: join(dir, 'store_known_hosts'), knownHostsFiles: [knownHosts], agentSocket: null, sshConfigPath: join(dir, 'no_ssh_config') };
}

/**
 * A loopback sshd for this test file, its PATH led by the stand-ins (an nvidia-smi reporting an A100), started
 * before the file's tests and stopped after them; read its host and the options that trust it inside a test.
 */
export function standInHost(): { readonly sshd: () => Sshd; readonly connectOptions: () => ConnectOptions } {
  let sshd: Sshd | undefined;
  let options: ConnectOptions | undefined;
  before(async () => {
    sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
    options = trustingConnectOptions([sshd]);
  });
  after(async () => {
    await sshd?.stop();
  });
  return { sshd: () => sshd!, connectOptions: () => options! };
}

export function testRunManager(storage: string, connectOptions: ConnectOptions, extra: Partial<RunManagerDeps> = {}): RunManager {
  return new RunManager({
    store: new RunStore(join(storage, 'runs.json')),
    storageDir: storage,
    runnerDir: join(REPO, 'python-runner'),
    runnerVersion: 'test',
    connectOptions,
    ledger: new Ledger(join(storage, 'instances.json')),
    sync: sshSync(join(storage, 'sync-cache')),
    ...extra,
  });
}

/** Resolves when the run ends; register it before the run can end (a listener added later misses it). */
export function runFinished(m: RunManager, id: string, timeoutMs = 90_000): Promise<RunFinished> {
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`run ${id} did not finish in ${timeoutMs} ms`)), timeoutMs);
    m.onFinished((f) => {
      if (f.record.id === id) {
        clearTimeout(t);
        res(f);
      }
    });
  });
}

export async function until(what: string, f: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A workspace holding the demo's own-script train.py (a real script that logs like HF Trainer, no ML libraries). */
export function ownScriptWorkspace(): string {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  cpSync(join(REPO, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
  return ws;
}

/** Start on a test sshd: an own-script spec running `command` in `ws`, an A100 asked for. */
export function sshStartRequest(
  sshd: Sshd,
  ws: string,
  name: string,
  command: string,
  opts: { readonly env?: Readonly<Record<string, string>>; readonly download?: readonly string[] } = {},
): StartRequest {
  const spec = {
    version: 1,
    name,
    command,
    target: { provider: 'ssh', host: 'loopback', gpu: 'A100-40GB' },
    outputs: { dir: 'outputs', ...(opts.download ? { download: [...opts.download] } : {}) },
  };
  return {
    specPath: join(ws, 'finetune.yaml'),
    specText: JSON.stringify(spec),
    spec,
    name,
    workspaceDir: ws,
    env: { ...(opts.env ?? {}) },
    target: { kind: 'ssh', host: `${sshd.user}@127.0.0.1:${sshd.port}`, identityFile: sshd.userKeyPath },
    gpu: 'A100-40GB',
    teardown: { policy: 'terminate' },
  };
}

/** Every file under `dir` (none when it does not exist), as paths. */
export function allFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}
