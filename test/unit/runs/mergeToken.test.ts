// Issue 30.7: Merge Adapter sends the Hugging Face token to the host only when the run's base model is a Hub
// repo: a base model in a folder on the host loads without it, and a token the host does not need is only one
// more copy of it there. The spec as the run was sent (its local spec.json) says which. The host here is a
// local shell standing in for the SSH channel, with a stand-in `python` that records what came on its stdin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isHubModelId, mergeAdapter, startedSpecModel } from '../../../src/core/runs/outputs/adapterMerge';
import type { OnRunHost, RunHostPaths } from '../../../src/core/runs/hosts/hostOps';
import type { SshSession } from '../../../src/core/ssh/session';

function localSession(): SshSession {
  const exits = new WeakMap<object, Promise<{ code: number | null; signal: string | null }>>();
  return {
    execStream: async (command: string) => {
      const child = spawn('bash', ['-c', command]);
      child.stdin.on('error', () => {});
      const ch = Object.assign(new EventEmitter(), {
        stderr: child.stderr,
        end: (data: string) => child.stdin.end(data),
        signal: (name: string) => child.kill(`SIG${name}` as NodeJS.Signals),
        close: () => child.kill('SIGKILL'),
      });
      child.stdout.on('data', (d: Buffer) => ch.emit('data', d));
      exits.set(ch, new Promise((r) => child.once('exit', (code, signal) => r({ code, signal }))));
      child.once('close', () => ch.emit('close'));
      return ch;
    },
    exitOf: (ch: object) => exits.get(ch),
  } as unknown as SshSession;
}

/** A host whose merge step keeps its stdin in `stdin.json` and reports a merged folder. */
function recordingHost(): { onRunHost: OnRunHost; stdin: () => unknown } {
  const dir = mkdtempSync(join(tmpdir(), 'rft-merge-token-'));
  const python = join(dir, 'python');
  const done = JSON.stringify({ op: 'merge', stage: 'done', path: 'outputs/merged', bytes: 1 });
  writeFileSync(python, `#!/bin/sh\ncat > ${JSON.stringify(join(dir, 'stdin.json'))}\nprintf '%s\\n' '${done}'\n`);
  chmodSync(python, 0o755);
  const at: RunHostPaths = { root: dir, runDir: dir, workspace: dir, runner: dir, python };
  return {
    onRunHost: (<T>(_id: string, fn: (s: SshSession, a: RunHostPaths) => Promise<T>) => fn(localSession(), at)) as OnRunHost,
    stdin: () => JSON.parse(readFileSync(join(dir, 'stdin.json'), 'utf8')) as unknown,
  };
}

const merge = { dtype: 'bf16', device: 'auto', hfToken: 'hf_SeCrEt' } as const;

test('merge: a base model in a folder on the host gets no token', async () => {
  for (const baseModel of ['/models/llama-8b', './base', '../base', '~/models/x', 'C:\\models\\x', '.cache/x', undefined]) {
    const host = recordingHost();
    await mergeAdapter(host.onRunHost, 'R1', { ...merge, ...(baseModel !== undefined ? { baseModel } : {}) });
    assert.deepEqual(host.stdin(), {}, `base model ${String(baseModel)}`);
  }
});

test('merge: a Hub base model gets the token, on stdin only', async () => {
  for (const baseModel of ['meta-llama/Llama-3.1-8B', 'gpt2']) {
    const host = recordingHost();
    await mergeAdapter(host.onRunHost, 'R1', { ...merge, baseModel });
    assert.deepEqual(host.stdin(), { token: 'hf_SeCrEt' }, baseModel);
  }
  assert.equal(isHubModelId('meta-llama/Llama-3.1-8B'), true);
  assert.equal(isHubModelId('a/b/c'), false);
});

test('merge: the base model is read from the spec the run was sent with (its local spec.json)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-merge-spec-'));
  assert.equal(startedSpecModel(dir), undefined, 'no history: no model');
  writeFileSync(join(dir, 'spec.json'), JSON.stringify({ model: { id: 'Qwen/Qwen2.5-0.5B' } }));
  assert.equal(startedSpecModel(dir), 'Qwen/Qwen2.5-0.5B');
  writeFileSync(join(dir, 'spec.json'), JSON.stringify({ command: 'python train.py' }));
  assert.equal(startedSpecModel(dir), undefined);
  writeFileSync(join(dir, 'spec.json'), 'not json');
  assert.equal(startedSpecModel(dir), undefined);
  assert.equal(startedSpecModel(undefined), undefined);
});
