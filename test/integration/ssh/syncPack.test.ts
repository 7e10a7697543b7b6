// A sync's archive (packFormat.ts) unpacked by the host's python3 through a real sshd: trees identical, modes
// and mtimes kept, links as links, long and Unicode names, a large file streamed in the archive (stripes off),
// a third sync sends nothing. tar is not needed on the host for it: a tar first on the sshd's PATH records
// every call, and a sync makes none.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  lutimesSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { syncWorkspace } from '../../../src/core/ssh/sync';

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function which(cmd: string): string | undefined {
  for (const d of ['/usr/bin', '/bin', '/usr/local/bin']) if (existsSync(join(d, cmd))) return join(d, cmd);
  return undefined;
}

function tree(root: string): Map<string, { data: Buffer; mtime: number }> {
  const out = new Map<string, { data: Buffer; mtime: number }>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(root, p), { data: readFileSync(p), mtime: Math.floor(statSync(p).mtimeMs / 1000) });
    }
  };
  walk(root);
  return out;
}

function put(root: string, rel: string, data: Buffer | string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), data);
}

test('sync: the archive unpacks exactly on the host, tar is never run, a third sync sends nothing', { timeout: 120_000 }, async () => {
  const bin = mkdtempSync(join(tmpdir(), 'rft-tarbin-'));
  const argLog = join(bin, 'args.log');
  writeFileSync(join(bin, 'tar'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argLog}'\nexec ${which('tar')!} "$@"\n`);
  chmodSync(join(bin, 'tar'), 0o755);
  const sshd: Sshd = await startSshd({ pathPrepend: [bin] });
  const host = new SshHost({ host: 'pack-host' }, clientFor(sshd, { alias: 'pack-host' }).options);
  cleanups.push(async () => {
    host.close();
    await sshd.stop();
    rmSync(bin, { recursive: true, force: true });
  });

  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-pack-'));
  cleanups.push(() => rmSync(ws, { recursive: true, force: true }));
  put(ws, 'train.py', 'print("hi")\n');
  put(ws, 'empty.txt', '');
  put(ws, 'data/shard.bin', randomBytes(3 * 1024 * 1024 + 17)); // several 1 MiB reads, and a short last one
  put(ws, `deep/${'long_folder_name_'.repeat(6)}/config.yaml`, 'lr: 2e-4\n');
  put(ws, 'ünïcödé/名前.json', '{"ok": true}\n');
  put(ws, 'run.sh', '#!/bin/sh\necho run\n');
  chmodSync(join(ws, 'run.sh'), 0o750);
  chmodSync(join(ws, 'train.py'), 0o600);
  for (let i = 0; i < 80; i++) put(ws, `pkg/m${i % 7}/f${i}.py`, randomBytes(100 + i * 13)); // enough for two streams
  symlinkSync('train.py', join(ws, 'main.py')); // a link travels as a link
  lutimesSync(join(ws, 'main.py'), 1_600_000_000, 1_600_000_000);
  const remoteDir = '.remote-finetune/workspaces/pack';
  const abs = join(sshd.home, remoteDir);

  const first = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir, stripes: 1 });
  assert.equal(first.uploaded, tree(ws).size);
  put(ws, 'train.py', 'print("edited")\n');
  rmSync(join(ws, 'pkg/m1/f1.py'));
  put(ws, 'data/new.bin', randomBytes(1024 * 1024));
  const second = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir, stripes: 1 });
  assert.equal(second.uploaded, 2);
  assert.equal(second.deleted, 1);

  const want = tree(ws);
  const got = tree(abs);
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
  for (const [k, v] of want) {
    assert.ok(v.data.equals(got.get(k)!.data), `content of ${k}`);
    assert.equal(got.get(k)!.mtime, v.mtime, `mtime of ${k}`);
    if (k !== 'main.py') assert.equal(statSync(join(abs, k)).mode & 0o7777, statSync(join(ws, k)).mode & 0o7777, `mode of ${k}`);
  }
  assert.equal(readlinkSync(join(abs, 'main.py')), 'train.py');
  const third = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  assert.equal(third.uploaded, 0);
  assert.equal(existsSync(argLog) ? readFileSync(argLog, 'utf8') : '', '', 'no tar was run on the host');
});
