import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkHostKey,
  fingerprintSha256,
  keyTypeOf,
  rememberHostKey,
  changedHostKeyMessage,
  preferKnownHostKeyAlgorithms,
} from '../../../src/core/ssh/knownHostsFile';

function newKey(dir: string, name: string): { type: string; blob: Buffer; pubLine: string; path: string } {
  const path = join(dir, name);
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', path]);
  const pubLine = readFileSync(`${path}.pub`, 'utf8').trim();
  const blob = Buffer.from(pubLine.split(' ')[1]!, 'base64');
  return { type: keyTypeOf(blob), blob, pubLine, path };
}

const dir = mkdtempSync(join(tmpdir(), 'rft-kh-'));
const a = newKey(dir, 'a');
const b = newKey(dir, 'b');

test('fingerprintSha256 matches ssh-keygen -l', () => {
  const out = execFileSync('ssh-keygen', ['-l', '-E', 'sha256', '-f', `${a.path}.pub`], { encoding: 'utf8' });
  assert.ok(out.includes(fingerprintSha256(a.blob)), out);
  assert.equal(a.type, 'ssh-ed25519');
});

test('plain entries: bare name for port 22, [host]:port otherwise, patterns and negation', () => {
  const f = join(dir, 'plain');
  const [t, k] = a.pubLine.split(' ');
  writeFileSync(f, `# comment\ngpu1.example.com ${t} ${k}\n[10.0.0.5]:2222 ${t} ${k}\n*.lab,!bad.lab ${t} ${k}\n`);
  assert.equal(checkHostKey([f], 'gpu1.example.com', 22, a).kind, 'known');
  // Nothing recorded for [gpu1.example.com]:2222: like ssh, the key under the bare name counts.
  assert.equal(checkHostKey([f], 'gpu1.example.com', 2222, a).kind, 'known');
  assert.equal(checkHostKey([f], 'gpu1.example.com', 2222, b).kind, 'unknown');
  assert.equal(checkHostKey([f], '10.0.0.5', 2222, a).kind, 'known');
  assert.equal(checkHostKey([f], 'x.lab', 22, a).kind, 'known');
  assert.equal(checkHostKey([f], 'bad.lab', 22, a).kind, 'unknown');
});

test('hashed entries written by ssh-keygen -H are recognised', () => {
  const f = join(dir, 'hashed');
  const [t, k] = a.pubLine.split(' ');
  writeFileSync(f, `gpu2.example.com ${t} ${k}\n[gpu3]:2200 ${t} ${k}\n`);
  execFileSync('ssh-keygen', ['-q', '-H', '-f', f], { stdio: 'ignore' });
  assert.ok(readFileSync(f, 'utf8').startsWith('|1|'));
  assert.equal(checkHostKey([f], 'gpu2.example.com', 22, a).kind, 'known');
  assert.equal(checkHostKey([f], 'gpu3', 2200, a).kind, 'known');
  const changed = checkHostKey([f], 'gpu2.example.com', 22, b);
  assert.equal(changed.kind, 'changed');
});

test('a different key of the same type is a change naming both fingerprints; never "known"', () => {
  const f = join(dir, 'changed');
  const [t, k] = a.pubLine.split(' ');
  writeFileSync(f, `gpu4 ${t} ${k}\n`);
  const v = checkHostKey([f], 'gpu4', 22, b);
  assert.equal(v.kind, 'changed');
  if (v.kind !== 'changed') return;
  assert.deepEqual(v.knownFingerprints, [fingerprintSha256(a.blob)]);
  assert.equal(v.fingerprint, fingerprintSha256(b.blob));
  const msg = changedHostKeyMessage('gpu4', 22, v);
  assert.ok(msg.includes('gpu4') && msg.includes(fingerprintSha256(a.blob)) && msg.includes(fingerprintSha256(b.blob)), msg);
});

test('@revoked keys are refused even when also listed', () => {
  const f = join(dir, 'revoked');
  const [t, k] = a.pubLine.split(' ');
  writeFileSync(f, `@revoked * ${t} ${k}\ngpu5 ${t} ${k}\n`);
  assert.equal(checkHostKey([f], 'gpu5', 22, a).kind, 'revoked');
});

test('the extension store is hashed known_hosts that OpenSSH itself accepts', () => {
  const store = join(dir, 'store');
  rememberHostKey(store, 'gpu6', 2022, a);
  assert.ok(readFileSync(store, 'utf8').startsWith('|1|'));
  assert.equal(checkHostKey([join(dir, 'missing'), store], 'gpu6', 2022, a).kind, 'known');
  // ssh-keygen -F finds the hashed entry under OpenSSH's own name for it.
  const out = execFileSync('ssh-keygen', ['-F', '[gpu6]:2022', '-f', store], { encoding: 'utf8' });
  assert.ok(out.includes('ssh-ed25519'), out);
});

test('host key algorithms: types on record for the host come first (hashed entries too); revoked and CA lines do not count', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-kh-order-'));
  const file = join(dir, 'known_hosts');
  const defaults = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] as const;
  const blob = Buffer.from('AAAAB3NzaC1yc2EAAAADAQABAAABAQ', 'base64');
  // Recorded hashed, as `HashKnownHosts yes` writes it.
  rememberHostKey(file, 'gpu.example.com', 22, { type: 'ssh-rsa', blob });
  writeFileSync(
    file,
    readFileSync(file, 'utf8') +
      `@revoked gpu.example.com ecdsa-sha2-nistp256 ${blob.toString('base64')}\n` +
      `@cert-authority *.example.com ssh-ed25519 ${blob.toString('base64')}\n`,
  );
  assert.deepEqual(preferKnownHostKeyAlgorithms([file], 'gpu.example.com', 22, defaults), [
    'rsa-sha2-512',
    'rsa-sha2-256',
    'ssh-rsa',
    'ssh-ed25519',
    'ecdsa-sha2-nistp256',
  ]);
  assert.deepEqual(preferKnownHostKeyAlgorithms([file], 'other.example.com', 22, defaults), [...defaults], 'an unknown host keeps the default order');
  assert.deepEqual(preferKnownHostKeyAlgorithms([join(dir, 'missing')], 'gpu.example.com', 22, defaults), [...defaults]);
});
