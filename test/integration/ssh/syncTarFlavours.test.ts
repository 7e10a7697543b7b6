// The remote extract works with every tar a GPU host may have: GNU tar (Ubuntu, Debian, Amazon Linux), bsdtar
// (libarchive) and BusyBox tar (Alpine-based images). Each flavour is put first on the sshd's PATH behind a
// wrapper that logs its arguments, so the test also shows which options each one was given: 1 MiB records
// (-b 2048) where the tar supports them, none where it would refuse them.
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

const flavours: ReadonlyArray<{ name: string; exec: string | undefined; blocked: boolean }> = [
  { name: 'GNU tar', exec: which('tar'), blocked: true },
  { name: 'bsdtar', exec: which('bsdtar'), blocked: true },
  { name: 'BusyBox tar', exec: which('busybox') ? `${which('busybox')!} tar` : undefined, blocked: false },
];

for (const flavour of flavours) {
  test(`sync through ${flavour.name}: trees identical, mtimes kept, a third sync sends nothing`, { timeout: 120_000 }, async (t) => {
    if (!flavour.exec) {
      t.skip(`${flavour.name} is not installed here (.ci/run installs it)`);
      return;
    }
    const bin = mkdtempSync(join(tmpdir(), 'rft-tarbin-'));
    const argLog = join(bin, 'args.log');
    writeFileSync(join(bin, 'tar'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argLog}'\nexec ${flavour.exec} "$@"\n`);
    chmodSync(join(bin, 'tar'), 0o755);
    const sshd: Sshd = await startSshd({ pathPrepend: [bin] });
    const host = new SshHost({ host: 'tar-host' }, clientFor(sshd, { alias: 'tar-host' }).options);
    cleanups.push(async () => {
      host.close();
      await sshd.stop();
      rmSync(bin, { recursive: true, force: true });
    });

    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-tar-'));
    cleanups.push(() => rmSync(ws, { recursive: true, force: true }));
    put(ws, 'train.py', 'print("hi")\n');
    put(ws, 'empty.txt', '');
    put(ws, 'data/shard.bin', randomBytes(3 * 1024 * 1024 + 17)); // several 1 MiB records, and a short last one
    put(ws, `deep/${'long_folder_name_'.repeat(6)}/config.yaml`, 'lr: 2e-4\n'); // over ustar's 100 bytes: a pax header
    put(ws, 'ünïcödé/名前.json', '{"ok": true}\n');
    for (let i = 0; i < 80; i++) put(ws, `pkg/m${i % 7}/f${i}.py`, randomBytes(100 + i * 13)); // enough for two streams
    symlinkSync('train.py', join(ws, 'main.py')); // a link travels as a link
    lutimesSync(join(ws, 'main.py'), 1_600_000_000, 1_600_000_000); // an old link: BusyBox tar does not restore a link's mtime
    const remoteDir = '.remote-finetune/workspaces/tar-flavour';
    const abs = join(sshd.home, remoteDir);

    const first = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
    assert.equal(first.uploaded, tree(ws).size);
    put(ws, 'train.py', 'print("edited")\n');
    rmSync(join(ws, 'pkg/m1/f1.py'));
    put(ws, 'data/new.bin', randomBytes(1024 * 1024));
    const second = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
    assert.equal(second.uploaded, 2);
    assert.equal(second.deleted, 1);

    const want = tree(ws);
    const got = tree(abs);
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
    for (const [k, v] of want) {
      assert.ok(v.data.equals(got.get(k)!.data), `content of ${k}`);
      assert.equal(got.get(k)!.mtime, v.mtime, `mtime of ${k}`);
    }
    assert.equal(readlinkSync(join(abs, 'main.py')), 'train.py');
    const third = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
    assert.equal(third.uploaded, 0);

    const extracts = readFileSync(argLog, 'utf8')
      .split('\n')
      .filter((l) => l.includes('-x'));
    assert.ok(extracts.length >= 3, `tar was used for every sync (${extracts.length} extracts)`);
    for (const l of extracts) assert.equal(l.includes('-b 2048'), flavour.blocked, `${flavour.name} got: ${l}`);
  });
}
