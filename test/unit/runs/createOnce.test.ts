// Files made once per install (the owner id, the cloud key pair) when several windows make them at the same
// moment: separate processes race from a common start time, as two VS Code windows opened together would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createOnce } from '../../../src/core/runs/store/createOnce';
import { loadSsh2 } from '../../../src/core/ssh/ssh2Module';

const RACERS = 6;

/** Runs `code` (with `dir` and a start time) in RACERS processes at once; returns each one's stdout. */
async function race(code: string, dir: string): Promise<string[]> {
  const at = Date.now() + 1500;
  const script = `const at = ${at}; while (Date.now() < at) {} (async () => { ${code} })().catch((e) => { console.error(e); process.exit(1); });`;
  return await Promise.all(
    Array.from(
      { length: RACERS },
      () =>
        new Promise<string>((resolve, reject) => {
          const p = spawn(process.execPath, ['--import', 'tsx', '-e', script], { env: { ...process.env, RACE_DIR: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          let err = '';
          p.stdout.on('data', (d: Buffer) => (out += d.toString()));
          p.stderr.on('data', (d: Buffer) => (err += d.toString()));
          p.on('close', (c) => (c === 0 ? resolve(out.trim()) : reject(new Error(`racer exited ${c}: ${err}`))));
        }),
    ),
  );
}

test('createOnce: the first content wins, a later call changes nothing and says so, no temporary file is left', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-once-'));
  const f = join(dir, 'sub', 'x');
  assert.equal(createOnce(f, 'first\n', 0o600), true);
  assert.equal(createOnce(f, 'second\n', 0o600), false);
  assert.equal(readFileSync(f, 'utf8'), 'first\n');
  assert.deepEqual(readdirSync(join(dir, 'sub')), ['x']);
});

test('owner id: windows starting together on a first install all end up with the one id on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-owner-'));
  const mod = join(process.cwd(), 'src/core/runs/store/ownerId.ts');
  const ids = await race(`const { ownerIdFor } = require(${JSON.stringify(mod)}); console.log(ownerIdFor(process.env.RACE_DIR));`, dir);
  const onDisk = readFileSync(join(dir, 'owner-id'), 'utf8').trim();
  assert.deepEqual(
    ids,
    Array.from({ length: RACERS }, () => onDisk),
    `every window's id is the one kept: ${ids.join(' ')}`,
  );
});

test('cloud key: windows launching their first instance together all hand the cloud the public half of the private key on disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-key-'));
  const keyPath = join(dir, 'keys', 'cloud_ed25519');
  const mod = join(process.cwd(), 'src/core/runs/hosts/cloudKey.ts');
  const pubs = await race(
    `const { ensureCloudKey } = require(${JSON.stringify(mod)}); const k = await ensureCloudKey(${JSON.stringify(keyPath)}); console.log(k.publicKey);`,
    dir,
  );
  const { utils } = await loadSsh2();
  const parsed = utils.parseKey(readFileSync(keyPath, 'utf8'));
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  assert.ok(key && !(key instanceof Error));
  const blob = key.getPublicSSH().toString('base64');
  for (const p of pubs) assert.equal(p.split(' ')[1], blob, 'the public key handed out matches the private key instances are logged in to with');
  assert.equal(readFileSync(`${keyPath}.pub`, 'utf8').split(' ')[1], blob);
});
