// tarChunks against the real GNU tar: what it writes extracts byte for byte (small files packed into slices,
// large ones streamed, in-memory contents, symlinks, long names), each onHash sees the bytes that were sent,
// a content function runs only after every earlier hash, and a file that grew or shrank since the scan stops
// the archive with a clear error instead of sending a header that lies about its size.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync, appendFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parentDirEntries, tarChunks } from '../../../src/core/ssh/tarStream';
import type { TarEntry } from '../../../src/core/ssh/tarStream';

async function archive(entries: readonly TarEntry[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of tarChunks(entries)) parts.push(b);
  return Buffer.concat(parts);
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test('an archive of small, large, in-memory and linked entries extracts exactly with GNU tar', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const src = join(dir, 'src');
  const out = join(dir, 'out');
  spawnSync('mkdir', ['-p', src, out]);
  // Sizes around the 512-byte blocks and the 1 MiB slices, and past the 256 KiB small-file limit.
  const sizes = [0, 1, 511, 512, 513, 1023, 4096, 100_000, 262_144, 262_145, 700_000, 1_048_576, 3_000_001];
  const contents = new Map<string, Buffer>();
  const hashes = new Map<string, string>();
  const entries: TarEntry[] = [];
  sizes.forEach((size, i) => {
    // Enough small files that several slices are read ahead at once.
    for (let k = 0; k < (size < 5000 ? 150 : 1); k++) {
      const name = `d${i}/f${k}-${size}.bin`;
      const data = randomBytes(size);
      spawnSync('mkdir', ['-p', join(src, `d${i}`)]);
      writeFileSync(join(src, name), data);
      contents.set(name, data);
      entries.push({ name, size, mtime: 1_700_000_000 + i, mode: 0o640, source: join(src, name), onHash: (h) => hashes.set(name, h) });
    }
  });
  const long = `${'deep/'.repeat(30)}name-longer-than-ustar-allows.txt`;
  contents.set(long, Buffer.from('long name\n'));
  entries.push({ name: long, size: 10, mtime: 1_700_000_100, mode: 0o600, source: Buffer.from('long name\n') });
  entries.push({ name: 'link', size: 0, mtime: 1_700_000_100, mode: 0o777, source: Buffer.alloc(0), linkTarget: 'd0/f0-0.bin' });
  let seenAtManifest = -1;
  const manifest = Buffer.from('{"m":1}');
  entries.push({
    name: 'manifest.json',
    size: manifest.length,
    mtime: 1_700_000_200,
    mode: 0o644,
    source: () => {
      seenAtManifest = hashes.size;
      return manifest;
    },
  });
  contents.set('manifest.json', manifest);

  const tarBytes = await archive(entries);
  assert.equal(tarBytes.length % 512, 0, 'whole blocks');
  const r = spawnSync('tar', ['-x', '-f', '-', '-C', out], { input: tarBytes });
  assert.equal(r.status, 0, r.stderr.toString());
  for (const [name, data] of contents) assert.ok(readFileSync(join(out, name)).equals(data), name);
  assert.equal(readlinkSync(join(out, 'link')), 'd0/f0-0.bin');
  assert.equal(statSync(join(out, 'd2/f0-511.bin')).mode & 0o777, 0o640);
  assert.equal(statSync(join(out, 'd2/f0-511.bin')).mtimeMs, (1_700_000_000 + 2) * 1000);
  const hashed = entries.filter((e) => e.onHash);
  assert.equal(hashes.size, hashed.length);
  for (const e of hashed) assert.equal(hashes.get(e.name), sha(contents.get(e.name)!), e.name);
  assert.equal(seenAtManifest, hashed.length, 'the content function ran after every earlier hash');
});

for (const change of ['grew', 'shrank'] as const) {
  test(`a small file that ${change} since the scan stops the archive with its name`, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-tar-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const entries: TarEntry[] = [];
    for (let i = 0; i < 50; i++) {
      const p = join(dir, `f${i}`);
      writeFileSync(p, Buffer.alloc(1000, i));
      entries.push({ name: `f${i}`, size: 1000, mtime: 0, mode: 0o644, source: p });
    }
    if (change === 'grew') appendFileSync(join(dir, 'f37'), 'x');
    else truncateSync(join(dir, 'f37'), 999);
    await assert.rejects(archive(entries), (err: Error) => err.message === `${join(dir, 'f37')} changed size while syncing`);
  });
}

test('a file that vanished since the scan is an error, not a short archive', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tar-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await assert.rejects(archive([{ name: 'gone', size: 10, mtime: 0, mode: 0o644, source: join(dir, 'gone') }]), /ENOENT/);
});

test('archives extracted into one folder at once: GNU tar races creating shared parents unless folder entries lead', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-tar-race-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Two halves of one tree, as splitByBytes cuts a sync: the same parents in both (f/, f/a/, f/a/b/, and sixty
  // folders below it with a file from each half, so every round has many chances to race).
  const half = (k: number): TarEntry[] => [
    ...Array.from({ length: 30 }, (_, i) => ({ name: `f/a/b/${k}-${i}.txt`, size: 2, mtime: 0, mode: 0o644, source: Buffer.from(`${i}\n`) })),
    ...Array.from({ length: 60 }, (_, i) => ({ name: `f/a/b/d${i}/e/${k}.txt`, size: 2, mtime: 0, mode: 0o644, source: Buffer.from(`${i}\n`) })),
  ];
  const halves = [half(0), half(1)];
  const plain = await Promise.all(halves.map((h) => archive(h)));
  const led = await Promise.all(halves.map((h) => archive([...parentDirEntries(h, 1_700_000_000), ...h])));
  const dirs = parentDirEntries(halves[0]!, 0).map((e) => e.name);
  assert.equal(dirs.length, 3 + 2 * 60);
  assert.deepEqual(dirs.slice(0, 5), ['f/', 'f/a/', 'f/a/b/', 'f/a/b/d0/', 'f/a/b/d0/e/'], 'parents first');
  for (const d of dirs) assert.ok(d === 'f/' || dirs.indexOf(d.replace(/[^/]+\/$/, '')) < dirs.indexOf(d), `${d} after its parent`);
  const extractTogether = async (archives: readonly Buffer[], round: number): Promise<string[]> => {
    const out = join(dir, `out-${round}`);
    spawnSync('mkdir', ['-p', out]);
    const errors = await Promise.all(
      archives.map(
        (a) =>
          new Promise<string>((resolve) => {
            const c = spawn('tar', ['-x', '-f', '-', '-C', out], { stdio: ['pipe', 'ignore', 'pipe'] });
            let err = '';
            c.stderr.on('data', (d: Buffer) => (err += d.toString()));
            c.on('close', (code) => resolve(code === 0 ? '' : err));
            c.stdin.end(a);
          }),
      ),
    );
    return errors.filter((e) => e !== '');
  };
  let raced = '';
  for (let round = 0; round < 400 && !raced; round++) raced = (await extractTogether(plain, round)).join('');
  if (!raced) {
    t.skip('this tar never raced in 400 tries without leading folder entries: nothing to show here');
    return;
  }
  assert.match(raced, /No such file or directory/);
  for (let round = 0; round < 200; round++) assert.deepEqual(await extractTogether(led, 1000 + round), [], `round ${round} with folders leading`);
});
