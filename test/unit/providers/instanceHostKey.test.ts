import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { utils } from 'ssh2';
import { cloudInitHostKey, generateInstanceHostKey } from '../../../src/core/providers/instanceHostKey';

test('instance host key: an OpenSSH Ed25519 key pair that ssh-keygen and ssh2 read, public half matching', () => {
  const k = generateInstanceHostKey();
  const dir = mkdtempSync(join(tmpdir(), 'rft-hostkey-'));
  writeFileSync(join(dir, 'key'), k.privateKey, { mode: 0o600 });
  // OpenSSH itself derives the public key from the private one: it must be the one we pin.
  const derived = execFileSync('ssh-keygen', ['-y', '-f', join(dir, 'key')], { encoding: 'utf8' })
    .trim()
    .split(/\s+/)
    .slice(0, 2)
    .join(' ');
  assert.equal(derived, k.publicKey);
  const parsed = utils.parseKey(k.privateKey);
  assert.ok(!(parsed instanceof Error), String(parsed));
  const one = Array.isArray(parsed) ? parsed[0]! : parsed;
  assert.equal(one.type, 'ssh-ed25519');
  assert.equal(`ssh-ed25519 ${one.getPublicSSH().toString('base64')}`, k.publicKey);
  // A signature made with it verifies with the public half (what the SSH handshake relies on).
  const sig = one.sign(Buffer.from('handshake'));
  assert.ok(!(sig instanceof Error));
  assert.equal(one.verify(Buffer.from('handshake'), sig as Buffer), true);
  assert.notEqual(generateInstanceHostKey().publicKey, k.publicKey, 'a new key per instance');
});

test('instance host key: the cloud-config installs it as the only host key (cloud-init cc_ssh keys)', () => {
  const k = generateInstanceHostKey();
  const text = cloudInitHostKey(k);
  assert.ok(text.startsWith('#cloud-config\n'), 'cloud-init reads user-data as cloud-config only with this first line');
  const doc = parse(text) as Record<string, unknown>;
  assert.deepEqual(doc.ssh_keys, { ed25519_private: k.privateKey, ed25519_public: k.publicKey });
  assert.equal(doc.ssh_deletekeys, true);
  assert.deepEqual(doc.ssh_genkeytypes, []);
});
