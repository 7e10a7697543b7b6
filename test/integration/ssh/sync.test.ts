// Sync correctness against a real sshd: random edits, renames and deletes over several rounds, both trees
// byte-compared each time; ignore files; only changed files travel; host-written files survive; large warnings.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  existsSync,
  utimesSync,
  symlinkSync,
  lstatSync,
  readlinkSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { syncWorkspace } from '../../../src/core/ssh/sync';
import { manifestPathFor } from '../../../src/core/ssh/syncRemote';
import type { SyncOptions } from '../../../src/core/ssh/sync';

let sshd: Sshd;
let host: SshHost;
before(async () => {
  sshd = await startSshd();
  host = new SshHost({ host: 'sync-test' }, clientFor(sshd, { alias: 'sync-test' }).options);
});
after(async () => {
  host.close();
  await sshd.stop();
});

/** A seeded PRNG so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function listTree(root: string, skip: (rel: string) => boolean = () => false): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const rel = relative(root, p);
      if (skip(rel)) continue;
      if (e.isDirectory()) walk(p);
      else out.set(rel, readFileSync(p));
    }
  };
  if (existsSync(root)) walk(root);
  return out;
}

function assertSameTree(local: string, remote: string, skip: (rel: string) => boolean): void {
  const a = listTree(local, skip);
  const b = listTree(remote);
  assert.deepEqual([...b.keys()].sort(), [...a.keys()].sort());
  for (const [k, v] of a) assert.ok(v.equals(b.get(k)!), `content of ${k}`);
}

function write(root: string, rel: string, data: Buffer | string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), data);
}

test('random edits, renames and deletes over 6 rounds: both trees byte-identical, only changes travel', { timeout: 120_000 }, async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  const cache = join(mkdtempSync(join(tmpdir(), 'rft-cache-')), 'hashes.json');
  const rand = rng(20261121);
  const names = [
    'train.py',
    'cfg/finetune.yaml',
    'cfg/accelerate.yaml',
    'src/a b.py',
    "src/it's.py",
    'src/ünï/çødé.txt',
    'data/x.jsonl',
    '-dash.txt',
    'deep/1/2/3/4/5/f.txt',
    `long/${'n'.repeat(120)}/${'m'.repeat(110)}.txt`,
  ];
  for (let i = 0; i < 200; i++) names.push(`pkg/mod${i % 17}/file_${i}.py`);
  const content = (): Buffer => Buffer.from(Array.from({ length: Math.floor(rand() * 3000) }, () => Math.floor(rand() * 256)));
  for (const n of names) write(ws, n, content());
  write(ws, 'big.bin', Buffer.alloc(3 * 1024 * 1024 + 7, 0x5a));
  write(ws, 'empty.txt', '');
  const remoteDir = '.remote-finetune/workspaces/random';
  const remoteAbs = join(sshd.home, remoteDir);
  const opts: SyncOptions = { localRoot: ws, remoteDir, cacheFile: cache };
  const session = await host.session();
  const first = await syncWorkspace(session, opts);
  assert.equal(first.uploaded, names.length + 2);
  assertSameTree(ws, remoteAbs, () => false);
  const again = await syncWorkspace(session, opts);
  assert.equal(again.uploaded, 0, 'an unchanged tree sends nothing');
  assert.equal(again.deleted, 0);
  for (let round = 0; round < 6; round++) {
    const files = [...listTree(ws).keys()];
    let edits = 0;
    const changed = new Set<string>();
    for (const f of files) {
      const r = rand();
      if (r < 0.05) {
        writeFileSync(join(ws, f), content());
        changed.add(f);
        edits++;
      } else if (r < 0.08) {
        rmSync(join(ws, f));
        edits++;
      } else if (r < 0.11) {
        const to = `renamed/r${round}/${f.replace(/\//g, '_')}`;
        mkdirSync(dirname(join(ws, to)), { recursive: true });
        renameSync(join(ws, f), join(ws, to));
        changed.add(to);
        edits++;
      }
    }
    // Same size and mtime but different bytes: caught by the hash (the cache key includes the inode too).
    const victim = [...listTree(ws).keys()].find((f) => f.startsWith('pkg/') && !changed.has(f));
    if (victim) {
      const p = join(ws, victim);
      const st = statSync(p);
      const buf = readFileSync(p);
      if (buf.length > 0) {
        buf[0] = buf[0]! ^ 0xff;
        writeFileSync(`${p}.new`, buf);
        renameSync(`${p}.new`, p);
        utimesSync(p, st.atime, st.mtime);
        changed.add(victim);
      }
    }
    // The same, rewritten in place (same inode): only the ctime tells, so the cache key must include it.
    const inPlace = [...listTree(ws).keys()].find((f) => f.startsWith('pkg/') && !changed.has(f) && f !== victim);
    if (inPlace) {
      const p = join(ws, inPlace);
      const st = statSync(p);
      const buf = readFileSync(p);
      if (buf.length > 0) {
        buf[buf.length - 1] = buf[buf.length - 1]! ^ 0x55;
        writeFileSync(p, buf);
        utimesSync(p, st.atime, st.mtime);
        assert.equal(statSync(p).ino, st.ino);
        changed.add(inPlace);
      }
    }
    const r = await syncWorkspace(await host.session(), opts);
    assertSameTree(ws, remoteAbs, () => false);
    assert.ok(r.uploaded <= changed.size, `round ${round}: sent ${r.uploaded} files for ${changed.size} changed (${edits} edits)`);
    assert.ok(r.uploaded >= 1);
  }
  // Many changes into an existing tree: parallel tar streams, then per-file renames.
  const many = [...listTree(ws).keys()].filter((f) => f.startsWith('pkg/')).slice(0, 120);
  for (const f of many) writeFileSync(join(ws, f), content());
  const big = await syncWorkspace(await host.session(), { ...opts, streams: 3 });
  assert.equal(big.uploaded, many.length);
  assertSameTree(ws, remoteAbs, () => false);
});

test('.gitignore and .finetuneignore (nested too) are honoured; .git is never sent', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, '.gitignore', 'wandb/\n*.pyc\n');
  write(ws, '.finetuneignore', 'model_cache/\nsecret-notes.md\n');
  write(ws, 'sub/.gitignore', 'local-only.txt\n');
  write(ws, 'train.py', 'print(1)\n');
  write(ws, 'x.pyc', 'bytecode');
  write(ws, 'wandb/run/log.txt', 'log');
  write(ws, 'model_cache/w.bin', 'weights');
  write(ws, 'secret-notes.md', 'notes');
  write(ws, 'sub/local-only.txt', 'nope');
  write(ws, 'sub/keep.txt', 'yes');
  write(ws, '.git/HEAD', 'ref: refs/heads/main\n');
  const remoteDir = '.remote-finetune/workspaces/ignores';
  await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  const remote = [...listTree(join(sshd.home, remoteDir)).keys()].sort();
  assert.deepEqual(remote, ['.finetuneignore', '.gitignore', 'sub/.gitignore', 'sub/keep.txt', 'train.py']);
});

test('files the run wrote on the host are never deleted; a remote edit of a synced file is repaired', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, 'train.py', 'v1\n');
  write(ws, 'old.py', 'old\n');
  const remoteDir = '.remote-finetune/workspaces/outputs';
  const abs = join(sshd.home, remoteDir);
  await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  write(abs, 'checkpoints/checkpoint-50/adapter.safetensors', 'host-made');
  writeFileSync(join(abs, 'train.py'), 'edited on the host\n');
  rmSync(join(ws, 'old.py'));
  const r = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  assert.equal(r.deleted, 1);
  assert.equal(r.uploaded, 1);
  assert.equal(readFileSync(join(abs, 'train.py'), 'utf8'), 'v1\n');
  assert.equal(existsSync(join(abs, 'old.py')), false);
  assert.equal(readFileSync(join(abs, 'checkpoints/checkpoint-50/adapter.safetensors'), 'utf8'), 'host-made');
});

test('large data or checkpoint folders are announced first, and declining sends nothing', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, 'train.py', 'x');
  write(ws, 'checkpoints/step-1/model.safetensors', Buffer.alloc(2 * 1024 * 1024));
  write(ws, 'data/train.jsonl', Buffer.alloc(2 * 1024 * 1024));
  const remoteDir = '.remote-finetune/workspaces/large';
  const seen: string[] = [];
  const r = await syncWorkspace(await host.session(), {
    localRoot: ws,
    remoteDir,
    largeLimits: { folderBytes: 1024 * 1024, largeBytes: 100 * 1024 * 1024 },
    confirmLarge: async (w) => {
      seen.push(...w.map((x) => `${x.path}:${x.reason}`));
      return false;
    },
  });
  assert.equal(r.cancelled, true);
  assert.deepEqual(seen.sort(), ['checkpoints/:checkpoints', 'data/:data']);
  assert.equal(existsSync(join(sshd.home, remoteDir)), false);
});

test('a large-files question that throws ends the extract channels a first sync opened early: no stage or tar is left on the host', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, 'train.py', 'x');
  write(ws, 'data/train.jsonl', Buffer.alloc(2 * 1024 * 1024));
  const remoteDir = '.remote-finetune/workspaces/large-throws';
  const session = await host.session();
  // No hash cache and four streams: three extract channels are opened beside the state read, before the question.
  await assert.rejects(
    syncWorkspace(session, {
      localRoot: ws,
      remoteDir,
      streams: 4,
      largeLimits: { folderBytes: 1024 * 1024, largeBytes: 100 * 1024 * 1024 },
      confirmLarge: async () => {
        throw new Error('the question could not be asked');
      },
    }),
    /the question could not be asked/,
  );
  // The session stays open: what ends the host's processes is the empty archives, not a disconnect.
  const left = await session.exec(`ls -a ${join(sshd.home, '.remote-finetune/workspaces')}; pgrep -u "$(id -u)" -fa 'large-throws[.]rft-stage' || true`);
  const text = left.stdout.toString();
  assert.doesNotMatch(text, /rft-stage/, text);
  assert.equal(existsSync(join(sshd.home, remoteDir)), false);
});

test('excluding the announced large folders sends the rest and keeps what an earlier sync put on the host', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, 'train.py', 'x');
  write(ws, 'data/train.jsonl', Buffer.alloc(2 * 1024 * 1024, 7));
  const remoteDir = '.remote-finetune/workspaces/large-exclude';
  const abs = join(sshd.home, remoteDir);
  const limits = { folderBytes: 1024 * 1024, largeBytes: 100 * 1024 * 1024 };
  // First sync: the person sends the data once.
  const first = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir, largeLimits: limits, confirmLarge: async () => true });
  assert.equal(first.uploaded, 2);
  // Later: more data, a bigger checkpoint folder, and this time the answer is "exclude".
  write(ws, 'data/more.jsonl', Buffer.alloc(2 * 1024 * 1024, 8));
  write(ws, 'checkpoints/step-1/model.safetensors', Buffer.alloc(2 * 1024 * 1024));
  writeFileSync(join(ws, 'train.py'), 'y');
  const r = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir, largeLimits: limits, confirmLarge: async () => 'exclude' });
  assert.equal(r.cancelled, false);
  assert.deepEqual([...(r.excluded ?? [])].sort(), ['checkpoints/', 'data/']);
  assert.equal(r.uploaded, 1, 'only train.py travelled');
  assert.equal(r.deleted, 0);
  assert.equal(readFileSync(join(abs, 'train.py'), 'utf8'), 'y');
  assert.equal(existsSync(join(abs, 'data/more.jsonl')), false);
  assert.equal(existsSync(join(abs, 'checkpoints')), false);
  assert.equal(statSync(join(abs, 'data/train.jsonl')).size, 2 * 1024 * 1024, 'the data sent earlier stays on the host');
  // And the next sync that sends everything does not resend what is already there.
  const all = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir, largeLimits: limits, confirmLarge: async () => true });
  assert.equal(all.uploaded, 2, 'data/more.jsonl and the checkpoint, not data/train.jsonl');
});

test('files over the identity threshold are recognised by (size, mtime, inode, ctime), never hashed, and still re-sent when rewritten in place', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  const cacheFile = join(mkdtempSync(join(tmpdir(), 'rft-cache-')), 'hashes.json');
  write(ws, 'model.safetensors', Buffer.alloc(200_000, 1));
  // A whole-second mtime, so putting it back later restores it exactly (a Date would lose the nanoseconds).
  utimesSync(join(ws, 'model.safetensors'), 1_700_000_000, 1_700_000_000);
  write(ws, 'train.py', 'print(1)\n');
  const remoteDir = '.remote-finetune/workspaces/identity';
  const abs = join(sshd.home, remoteDir);
  const opts: SyncOptions = { localRoot: ws, remoteDir, cacheFile, identityBytes: 100_000 };
  assert.equal((await syncWorkspace(await host.session(), opts)).uploaded, 2);
  const manifest = JSON.parse(readFileSync(join(sshd.home, manifestPathFor(remoteDir)), 'utf8')) as { files: Record<string, [number, number, string]> };
  assert.match(manifest.files['model.safetensors']![2], /^id:[0-9a-f]{61}$/, 'a large file carries an identity token');
  assert.match(manifest.files['train.py']![2], /^[0-9a-f]{64}$/, 'a small file carries its sha256');
  assert.equal((await syncWorkspace(await host.session(), opts)).uploaded, 0, 'unchanged: nothing sent');
  // Rewritten in place, same size, mtime put back: the ctime changed, so it travels.
  const p = join(ws, 'model.safetensors');
  const st = statSync(p);
  writeFileSync(p, Buffer.alloc(200_000, 2));
  utimesSync(p, 1_700_000_000, 1_700_000_000);
  assert.equal(statSync(p).mtimeMs, st.mtimeMs);
  assert.equal(statSync(p).ino, st.ino);
  const r = await syncWorkspace(await host.session(), opts);
  assert.equal(r.uploaded, 1);
  assert.ok(readFileSync(join(abs, 'model.safetensors')).equals(Buffer.alloc(200_000, 2)));
  // Without the local cache (another machine) the token cannot be matched: the large file is sent again, the
  // small one is recognised by its hash.
  rmSync(cacheFile);
  const lost = await syncWorkspace(await host.session(), opts);
  assert.equal(lost.uploaded, 1);
  assert.equal(lost.unchanged, 1);
  assertSameTree(ws, abs, () => false);
});

test('a damaged or hostile remote manifest loses nothing: bad entries are dropped and those files sent again', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, 'a.py', 'a\n');
  write(ws, 'b.py', 'b\n');
  const remoteDir = '.remote-finetune/workspaces/hostile';
  const abs = join(sshd.home, remoteDir);
  await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  const mpath = join(sshd.home, manifestPathFor(remoteDir));
  const m = JSON.parse(readFileSync(mpath, 'utf8')) as { v: number; files: Record<string, unknown> };
  m.files['a.py'] = [2, 0, '"],"x":["'];
  m.files['../../escape'] = 'nonsense';
  writeFileSync(mpath, JSON.stringify(m));
  writeFileSync(join(abs, 'a.py'), 'tampered\n');
  const r = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  assert.equal(r.uploaded, 1);
  assertSameTree(ws, abs, () => false);
  const again = JSON.parse(readFileSync(mpath, 'utf8')) as { files: Record<string, unknown> };
  assert.deepEqual(Object.keys(again.files).sort(), ['a.py', 'b.py']);
  writeFileSync(mpath, '\u0000\xff not json');
  assert.equal((await syncWorkspace(await host.session(), { localRoot: ws, remoteDir })).uploaded, 2);
  assertSameTree(ws, abs, () => false);
});

test('a connection dropped mid-sync leaves the target as it was; the next sync completes and old staging dirs are swept', { timeout: 120_000 }, async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  write(ws, 'train.py', 'v1\n');
  const remoteDir = '.remote-finetune/workspaces/dropped';
  const abs = join(sshd.home, remoteDir);
  const own = new SshHost({ host: 'sync-test' }, clientFor(sshd, { alias: 'sync-test' }).options);
  try {
    await syncWorkspace(await own.session(), { localRoot: ws, remoteDir });
    write(ws, 'train.py', 'v2\n');
    for (let i = 0; i < 4; i++) write(ws, `data/shard_${i}.bin`, Buffer.alloc(24 * 1024 * 1024, i + 1));
    let killed = 0;
    await assert.rejects(
      syncWorkspace(await own.session(), {
        localRoot: ws,
        remoteDir,
        onProgress: (p) => {
          if (p.phase === 'upload')
            setTimeout(() => {
              killed = sshd.killConnectionChildren();
            }, 30);
        },
      }),
      (e: unknown) => {
        assert.match(String(e), /connection to sync-test was lost while syncing .*Nothing was half-written/, String(e));
        return true;
      },
    );
    assert.ok(killed > 0, 'the connection was cut while the upload ran');
    // Nothing half-written in the target: the old file is intact and no shard arrived.
    assert.equal(readFileSync(join(abs, 'train.py'), 'utf8'), 'v1\n');
    assert.equal(existsSync(join(abs, 'data')), false);
    const parent = dirname(abs);
    const stages = readdirSync(parent).filter((n) => n.startsWith('.dropped.rft-stage-'));
    assert.ok(stages.length >= 1, 'the cut-off sync left its staging dir');
    // The cut-off remote tar may still be finishing (creating folders in the stage, which refreshes its mtime):
    // wait until no process names the stage, then age it past the sweep threshold; the next sync (on a new
    // connection) removes it and completes.
    const busy = (): boolean =>
      readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .some((d) => {
          try {
            return readFileSync(`/proc/${d}/cmdline`, 'latin1').includes('.dropped.rft-stage-');
          } catch {
            return false;
          }
        });
    for (let waited = 0; busy() && waited < 20_000; waited += 100) await new Promise((res) => setTimeout(res, 100));
    for (const st of stages) utimesSync(join(parent, st), new Date(Date.now() - 2 * 3600_000), new Date(Date.now() - 2 * 3600_000));
    const r = await syncWorkspace(await own.session(), { localRoot: ws, remoteDir });
    assert.equal(r.uploaded, 5);
    assertSameTree(ws, abs, () => false);
    assert.deepEqual(
      readdirSync(parent).filter((n) => n.startsWith('.dropped.rft-stage-')),
      [],
    );
  } finally {
    own.close();
  }
});

test('symbolic links travel as links, as rsync -a sends them: never followed, retargeted, deleted and replaced like files', async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-links-'));
  const outside = mkdtempSync(join(tmpdir(), 'rft-outside-'));
  writeFileSync(join(outside, 'huge.bin'), Buffer.alloc(64 * 1024, 1)); // must not be pulled in through a link
  write(ws, 'configs/base.yaml', 'lr: 1e-4\n');
  symlinkSync('configs/base.yaml', join(ws, 'train.yaml')); // relative, to a file inside
  symlinkSync('configs', join(ws, 'cfg')); // to a folder inside: the folder is not sent twice
  symlinkSync(outside, join(ws, 'datasets')); // absolute, outside the workspace: kept as written, not followed
  symlinkSync('does/not/exist', join(ws, 'dangling'));
  const longTarget = `${'deep_folder_name/'.repeat(8)}model.safetensors`; // over ustar's 100-byte link field
  symlinkSync(longTarget, join(ws, 'weights'));
  write(ws, '.finetuneignore', 'ignored-link\n');
  symlinkSync('configs/base.yaml', join(ws, 'ignored-link'));
  const remoteDir = '.remote-finetune/workspaces/links';
  const abs = join(sshd.home, remoteDir);
  const links = ['train.yaml', 'cfg', 'datasets', 'dangling', 'weights'];
  const assertLinks = (): void => {
    for (const l of links) {
      if (!existsSync(join(ws, l)) && !lstatOrUndefined(join(ws, l))) continue;
      assert.ok(lstatSync(join(abs, l)).isSymbolicLink(), `${l} is a link on the host`);
      assert.equal(readlinkSync(join(abs, l)), readlinkSync(join(ws, l)), `${l} target`);
    }
  };
  const first = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  assertLinks();
  assert.equal(existsSync(join(abs, 'ignored-link')), false);
  assert.equal(first.uploadedBytes, Buffer.byteLength('lr: 1e-4\n') + Buffer.byteLength('ignored-link\n'), 'link targets were not read');
  assert.equal(readFileSync(join(abs, 'train.yaml'), 'utf8'), 'lr: 1e-4\n');
  assert.equal((await syncWorkspace(await host.session(), { localRoot: ws, remoteDir })).uploaded, 0, 'unchanged links are not sent again');

  rmSync(join(ws, 'train.yaml'));
  symlinkSync('configs/other.yaml', join(ws, 'train.yaml')); // retargeted
  rmSync(join(ws, 'dangling')); // deleted
  rmSync(join(ws, 'cfg'));
  write(ws, 'cfg', 'now a file\n'); // a link replaced by a file
  rmSync(join(ws, 'configs/base.yaml'));
  symlinkSync('../train.yaml', join(ws, 'configs/base.yaml')); // a file replaced by a link
  const second = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir });
  assert.equal(second.deleted, 1);
  assert.equal(readlinkSync(join(abs, 'train.yaml')), 'configs/other.yaml');
  assert.equal(existsSync(join(abs, 'dangling')) || lstatOrUndefined(join(abs, 'dangling')) !== undefined, false);
  assert.ok(lstatSync(join(abs, 'cfg')).isFile());
  assert.equal(readFileSync(join(abs, 'cfg'), 'utf8'), 'now a file\n');
  assert.equal(readlinkSync(join(abs, 'configs/base.yaml')), '../train.yaml');
  assert.equal(readdirSync(outside).length, 1, "the link's target folder was never touched");
  assert.equal((await syncWorkspace(await host.session(), { localRoot: ws, remoteDir })).uploaded, 0);
});

function lstatOrUndefined(p: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

test('first syncs over four streams into shared folders land whole', async () => {
  // The streams of one sync unpack into the same folders at once (archiveStream.test.ts races four unpackers
  // in one folder); here, end to end, ten first syncs over four streams.
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-race-'));
  for (let i = 0; i < 400; i++) write(ws, `d${i % 3}/sub${i % 2}/f${i}.py`, `x = ${i}\n`);
  for (let round = 0; round < 10; round++) {
    const remoteDir = `.remote-finetune/workspaces/race-${round}`;
    const r = await syncWorkspace(await host.session(), { localRoot: ws, remoteDir, streams: 4 });
    assert.equal(r.uploaded, 400);
    assertSameTree(ws, join(sshd.home, remoteDir), () => false);
  }
});
