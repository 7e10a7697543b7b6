// Issue 30.7: "Open on the Hub" after a push opens the repo's page on the Hub's own origin (or the endpoint the
// push was told to use), built from the repo name: the host's answer names a URL too, and a host can name any
// site. The host here is a local shell standing in for the SSH channel, with a stand-in `python` that answers
// the publish operation the way python-runner's publish.py does, but with a URL of its choosing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HF_HUB_ORIGIN, hubRepoPage, publishToHub } from '../../../src/core/runs/outputs/hubPublish';
import type { OnRunHost, RunHostPaths } from '../../../src/core/runs/hosts/hostOps';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import type { SshSession } from '../../../src/core/ssh/session';

/** The two session calls runHostOp makes, over a local bash. */
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

/** A host whose publish step says it pushed `repo` and names `url` as its page. */
function hostAnswering(repo: string, url: string): OnRunHost {
  const dir = mkdtempSync(join(tmpdir(), 'rft-hub-page-'));
  const python = join(dir, 'python');
  const done = JSON.stringify({ op: 'publish', stage: 'done', message: 'pushed', repo, url, private: true, files: ['README.md'] });
  writeFileSync(python, `#!/bin/sh\ncat >/dev/null\nprintf '%s\\n' '${done}'\n`);
  chmodSync(python, 0o755);
  const at: RunHostPaths = { root: dir, runDir: dir, workspace: dir, runner: dir, python };
  return (<T>(_id: string, fn: (s: SshSession, a: RunHostPaths) => Promise<T>) => fn(localSession(), at)) as OnRunHost;
}

const record = { id: 'R1', name: 'tiny', createdAt: '2026-11-27T10:00:00.000Z' } as unknown as RunRecord;

test('Open on the Hub: the page is the Hub repo page whatever URL the host answers with', async () => {
  for (const url of [
    'https://evil.example/alice/tiny-lora',
    'javascript:alert(1)',
    'https://huggingface.co.evil.example/alice/tiny-lora',
    'file:///etc/passwd',
  ]) {
    const res = await publishToHub(hostAnswering('alice/tiny-lora', url), record, { what: 'adapter', repo: 'tiny-lora', private: true, token: 'hf_x' });
    assert.equal(res.url, 'https://huggingface.co/alice/tiny-lora', url);
    assert.equal(res.repo, 'alice/tiny-lora');
  }
});

test('Open on the Hub: a repo the host names that is no repo name is not taken; the one asked for is', async () => {
  const res = await publishToHub(hostAnswering('../../login?next=https://evil.example', 'https://huggingface.co/login'), record, {
    what: 'adapter',
    repo: 'tiny-lora',
    private: true,
    token: 'hf_x',
  });
  assert.equal(res.repo, 'tiny-lora');
  assert.equal(res.url, 'https://huggingface.co/tiny-lora');
});

test('Open on the Hub: the endpoint the push used (a mirror) is the page origin; anything but http(s) is not', () => {
  assert.equal(HF_HUB_ORIGIN, 'https://huggingface.co');
  assert.equal(hubRepoPage('alice/x', 'https://hf-mirror.example/'), 'https://hf-mirror.example/alice/x');
  assert.equal(hubRepoPage('alice/x', 'javascript:alert(1)'), 'https://huggingface.co/alice/x');
  assert.equal(hubRepoPage('alice/x', 'not a url'), 'https://huggingface.co/alice/x');
  assert.equal(hubRepoPage('alice/x'), 'https://huggingface.co/alice/x');
});
