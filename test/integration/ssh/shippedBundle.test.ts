// The SSH code as the VSIX ships it (production bundle, ssh2 from its vendor bundle without the native addon, so
// the pure-Node AES-GCM path that ssh2GcmCipher.ts tunes) against OpenSSH's sshd, the reference that checks every
// packet's tag: with each AES-GCM cipher, a first sync of a large file (sent in stripes over several channels at
// once) and of many small ones arrives byte for byte, and the host's own sha256sum agrees over the connection.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadShipped } from '../../../bench/lib/shipped';
import type { ShippedBuild } from '../../../bench/lib/shipped';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

let built: { build: ShippedBuild; sshd: Sshd; ws: string; files: Map<string, Buffer> } | undefined;
async function setup(): Promise<NonNullable<typeof built>> {
  if (built) return built;
  const dir = mkdtempSync(join(tmpdir(), 'rft-shipped-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const build = await loadShipped(dir);
  const sshd = await startSshd();
  cleanups.push(() => sshd.stop());
  const ws = mkdtempSync(join(tmpdir(), 'rft-shipped-ws-'));
  cleanups.push(() => rmSync(ws, { recursive: true, force: true }));
  const files = new Map<string, Buffer>();
  // Above the stripe threshold (64 MiB) and not a whole number of 1 MiB blocks; and 300 small files for the archive.
  files.set('weights/model.safetensors', randomBytes(66 * 1024 * 1024 + 12345));
  for (let i = 0; i < 300; i++) files.set(`data/part-${i}.jsonl`, randomBytes(Math.floor(Math.random() * 70000)));
  for (const [rel, data] of files) {
    mkdirSync(join(ws, rel, '..'), { recursive: true });
    writeFileSync(join(ws, rel), data);
  }
  return (built = { build, sshd, ws, files });
}

test('the shipped bundle loads ssh2 without its native addon, with the AES-GCM packet path tuned', { timeout: 120_000 }, async () => {
  const { build } = await setup();
  assert.equal(build.nativeCrypto, false);
  assert.equal(build.gcmPacketPathTuned, true, "ssh2GcmCipher.ts did not recognise the bundled ssh2's cipher class");
});

for (const cipher of ['aes128-gcm@openssh.com', 'aes256-gcm@openssh.com']) {
  test(`shipped bundle, ${cipher}: a first sync of a 66 MiB file in stripes and 300 small files arrives byte for byte`, { timeout: 180_000 }, async () => {
    const { build, sshd, ws, files } = await setup();
    const client = clientFor(sshd, { alias: 'shipped', extraConfig: [`  Ciphers ${cipher}`] });
    const host = new build.code.SshHost({ host: client.alias }, client.options);
    cleanups.push(() => host.close());
    const session = await host.session();
    assert.equal(session.cipher, cipher);
    const remoteDir = `shipped-${cipher.slice(0, 6)}`;
    await build.code.syncWorkspace(session, { localRoot: ws, remoteDir });
    for (const [rel, data] of files) assert.ok(readFileSync(join(sshd.home, remoteDir, rel)).equals(data), `${rel} arrived as sent`);
    const big = 'weights/model.safetensors';
    const r = await session.exec(`sha256sum ${join(sshd.home, remoteDir, big)}`);
    assert.equal(r.code, 0, r.stderr.toString());
    assert.equal(r.stdout.toString().split(' ')[0], createHash('sha256').update(files.get(big)!).digest('hex'), 'the host reads back what was sent');
    rmSync(join(sshd.home, remoteDir), { recursive: true, force: true });
  });
}
