// Large files travel as byte ranges over several channels (stripes.ts), written in place by the host's dd.
// Through GNU dd and BusyBox dd (each first on the sshd's PATH behind a wrapper that logs its arguments):
// the remote copy is byte-identical with the local mode and mtime, every range went by its own dd, a file
// of a size that is not a whole number of blocks keeps its tail, a re-sync sends nothing, an edited large
// file is sent again in stripes, and a first sync and a later one both place files atomically from the stage.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startSshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { syncWorkspace } from '../../../src/core/ssh/sync';
import { planPieces, sendPiece, STRIPE_BLOCK } from '../../../src/core/ssh/stripes';

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function put(root: string, rel: string, data: Buffer | string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), data);
}

test("planPieces: whole 1 MiB blocks, a file's tail in its last piece, every byte covered once, largest first", () => {
  const files = [
    { path: 'a', size: 10 * STRIPE_BLOCK + 17, mode: 0o644, mtime: 1 },
    { path: 'b', size: 3 * STRIPE_BLOCK, mode: 0o600, mtime: 2 },
    { path: 'c', size: 0, mode: 0o644, mtime: 3 },
  ];
  const pieces = planPieces(files, 4);
  for (const p of pieces) assert.equal(p.offset % STRIPE_BLOCK, 0);
  for (const f of files) {
    const mine = pieces.filter((p) => p.file === f).sort((x, y) => x.offset - y.offset);
    assert.ok(mine.length >= 1, f.path);
    let at = 0;
    for (const p of mine) {
      assert.equal(p.offset, at);
      at += p.length;
    }
    assert.equal(at, f.size, `${f.path} covered exactly`);
  }
  assert.deepEqual(
    pieces.map((p) => p.length),
    [...pieces.map((p) => p.length)].sort((x, y) => y - x),
  );
});

/** A fresh sshd (its sessions' PATH led by `pathPrepend`), a host on it and an empty local workspace, all removed after. */
async function hostWithWorkspace(alias: string, pathPrepend: string[] = []): Promise<{ host: SshHost; ws: string; home: string }> {
  const sshd = await startSshd({ pathPrepend });
  const host = new SshHost({ host: alias }, clientFor(sshd, { alias }).options);
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-stripes-'));
  cleanups.push(async () => {
    host.close();
    await sshd.stop();
    rmSync(ws, { recursive: true, force: true });
  });
  return { host, ws, home: sshd.home };
}

async function plainHost(): Promise<{ session: Awaited<ReturnType<SshHost['session']>>; ws: string; home: string }> {
  const { host, ws, home } = await hostWithWorkspace('piece-host');
  return { session: await host.session(), ws, home };
}

const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => existsSync(p));
for (const flavour of [
  { name: 'GNU dd', exec: '/bin/dd' },
  { name: 'BusyBox dd', exec: busybox ? `${busybox} dd` : undefined },
]) {
  test(
    `large files in stripes through ${flavour.name}: identical bytes, mode and mtime; re-sync sends nothing; an edit goes again`,
    { timeout: 120_000 },
    async (t) => {
      if (!flavour.exec) {
        t.skip(`${flavour.name} is not installed here (the preflight installs busybox)`);
        return;
      }
      const bin = mkdtempSync(join(tmpdir(), 'rft-ddbin-'));
      const argLog = join(bin, 'args.log');
      writeFileSync(join(bin, 'dd'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argLog}'\nexec ${flavour.exec} "$@"\n`);
      chmodSync(join(bin, 'dd'), 0o755);
      cleanups.push(() => rmSync(bin, { recursive: true, force: true }));
      const { host, ws, home } = await hostWithWorkspace('dd-host', [bin]);
      const big = randomBytes(9 * STRIPE_BLOCK + 12345); // not a whole number of blocks
      put(ws, 'model/weights.safetensors', big);
      chmodSync(join(ws, 'model/weights.safetensors'), 0o640);
      utimesSync(join(ws, 'model/weights.safetensors'), 1_700_000_000, 1_700_000_000);
      put(ws, 'data/other.bin', randomBytes(5 * STRIPE_BLOCK));
      put(ws, 'train.py', 'print("hi")\n');
      const remoteDir = '.remote-finetune/workspaces/stripes';
      const abs = join(home, remoteDir);
      // The hash cache keeps the identity token a large file was sent with (what makes a re-sync free).
      const opts = { localRoot: ws, remoteDir, identityBytes: 4 * STRIPE_BLOCK, stripes: 4, cacheFile: join(bin, 'hashes.json') };

      const first = await syncWorkspace(await host.session(), opts);
      assert.equal(first.uploaded, 3);
      const remote = join(abs, 'model/weights.safetensors');
      assert.ok(readFileSync(remote).equals(big), 'byte-identical');
      assert.equal(statSync(remote).mode & 0o777, 0o640);
      assert.equal(Math.floor(statSync(remote).mtimeMs / 1000), 1_700_000_000);
      assert.ok(readFileSync(join(abs, 'data/other.bin')).equals(readFileSync(join(ws, 'data/other.bin'))));
      const calls = readFileSync(argLog, 'utf8').trim().split('\n');
      assert.ok(calls.length >= 4, `one dd per range: ${calls.length}`);
      assert.ok(
        calls.every((c) => /of=\S+ bs=1048576 seek=\d+ conv=notrunc/.test(c)),
        calls.join('\n'),
      );
      assert.ok(
        calls.some((c) => !/seek=0 /.test(c)),
        'ranges past the start',
      );
      assert.ok(
        readFileSync(join(home, '.remote-finetune/workspaces/.stripes.rft-manifest.json'), 'utf8').includes('model/weights.safetensors'),
        'in the manifest',
      );

      rmSync(argLog, { force: true });
      const again = await syncWorkspace(await host.session(), opts);
      assert.equal(again.uploaded, 0, 'unchanged: nothing sent');
      assert.equal(existsSync(argLog), false, 'no dd ran');

      const edited = Buffer.from(big);
      edited.write('EDITED', 5 * STRIPE_BLOCK + 3);
      put(ws, 'model/weights.safetensors', edited);
      const third = await syncWorkspace(await host.session(), opts);
      assert.equal(third.uploaded, 1);
      assert.ok(readFileSync(remote).equals(edited), 'the edit arrived');
      assert.ok(readFileSync(argLog, 'utf8').trim().split('\n').length >= 2, 'sent in stripes again');
    },
  );
}

test('a stripe of a file that shrank after the sync planned it fails naming the file, instead of leaving a short copy', { timeout: 60_000 }, async () => {
  const { session, ws, home } = await plainHost();
  put(ws, 'big.bin', randomBytes(2 * STRIPE_BLOCK + 100));
  // Planned at 4 MiB; the file has 2 MiB and 100 bytes now.
  const piece = { file: { path: 'big.bin', size: 4 * STRIPE_BLOCK, mode: 0o644, mtime: 1 }, offset: 0, length: 4 * STRIPE_BLOCK };
  await assert.rejects(sendPiece(session, join(ws, 'big.bin'), join(home, 'stage/big.bin'), piece), (e: Error) =>
    /big\.bin ended at byte 2097252, before the 4194304 it had when the sync began/.test(e.message),
  );
});

test('a stripe aborted half-way rejects with an AbortError at once and closes its channel', { timeout: 60_000 }, async () => {
  const { session, ws, home } = await plainHost();
  put(ws, 'big.bin', randomBytes(48 * STRIPE_BLOCK));
  const piece = { file: { path: 'big.bin', size: 48 * STRIPE_BLOCK, mode: 0o644, mtime: 1 }, offset: 0, length: 48 * STRIPE_BLOCK };
  const ac = new AbortController();
  let sent = 0;
  const ch0 = session.execStream.bind(session);
  // Abort once the host has taken the first megabytes: mid-piece, whatever this machine's speed.
  session.execStream = async (cmd: string) => {
    const ch = await ch0(cmd);
    const write = ch.write.bind(ch) as (...a: unknown[]) => boolean;
    ch.write = ((chunk: Buffer, ...rest: unknown[]) => {
      sent += chunk.length;
      if (sent >= 4 * STRIPE_BLOCK) ac.abort();
      return write(chunk, ...rest);
    }) as typeof ch.write;
    return ch;
  };
  const t0 = Date.now();
  await assert.rejects(sendPiece(session, join(ws, 'big.bin'), join(home, 'stage/big.bin'), piece, ac.signal), (e: Error) => e.name === 'AbortError');
  assert.ok(sent < 48 * STRIPE_BLOCK, `stopped part-way (${sent} bytes written)`);
  assert.ok(Date.now() - t0 < 10_000);
});
