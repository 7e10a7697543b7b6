// archiveChunks against the host's real unpacker (packFormat.ts, run by python3 as a sync runs it): what it
// writes unpacks byte for byte (small files packed into slices, large ones streamed, in-memory contents,
// symlinks, long and Unicode names, modes and mtimes), each onHash sees the bytes that were sent, a content
// function runs only after every earlier hash, and a file that grew or shrank since the scan stops the archive
// with a clear error instead of sending a header that lies about its size. The unpacker refuses what a damaged
// stream could hold: paths outside its folder, an unknown entry type, an archive cut short.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync, appendFileSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { archiveChunks } from '../../../src/core/ssh/archiveStream';
import type { ArchiveEntry } from '../../../src/core/ssh/archiveStream';
import { PACK_END, PY_UNPACK, packHeader } from '../../../src/core/ssh/packFormat';

async function archive(entries: readonly ArchiveEntry[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const b of archiveChunks(entries)) parts.push(b);
  return Buffer.concat(parts);
}

function unpack(bytes: Buffer, into: string): { status: number | null; stderr: string } {
  const r = spawnSync('python3', ['-c', PY_UNPACK, into], { input: bytes });
  return { status: r.status, stderr: r.stderr.toString() };
}

function unpackAsync(bytes: Buffer, into: string): Promise<string> {
  return new Promise((resolve) => {
    const c = spawn('python3', ['-c', PY_UNPACK, into], { stdio: ['pipe', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.on('close', (code) => resolve(code === 0 ? '' : err || `exit ${code}`));
    c.stdin.end(bytes);
  });
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test('an archive of small, large, in-memory and linked entries unpacks exactly on the host', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-pack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const src = join(dir, 'src');
  const out = join(dir, 'out');
  spawnSync('mkdir', ['-p', src, out]);
  // Sizes around the 512-byte blocks and the 1 MiB slices, and past the 256 KiB small-file limit.
  const sizes = [0, 1, 511, 512, 513, 1023, 4096, 100_000, 262_144, 262_145, 700_000, 1_048_576, 3_000_001];
  const contents = new Map<string, Buffer>();
  const hashes = new Map<string, string>();
  const entries: ArchiveEntry[] = [];
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
  const long = `${'deep/'.repeat(30)}ünïcödé-名前-a-long-name.txt`;
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

  const bytes = await archive(entries);
  // No padding: every entry costs its header, its name and its bytes.
  const names = entries.reduce((n, e) => n + Buffer.byteLength(e.name) + Buffer.byteLength(e.linkTarget ?? ''), 0);
  assert.equal(bytes.length, entries.length * 29 + names + entries.reduce((n, e) => n + e.size, 0) + PACK_END.length);
  const r = unpack(bytes, out);
  assert.equal(r.status, 0, r.stderr);
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
    const dir = mkdtempSync(join(tmpdir(), 'rft-pack-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const entries: ArchiveEntry[] = [];
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
  const dir = mkdtempSync(join(tmpdir(), 'rft-pack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  await assert.rejects(archive([{ name: 'gone', size: 10, mtime: 0, mode: 0o644, source: join(dir, 'gone') }]), /ENOENT/);
});

test('archives unpacked into one folder at once, sharing parents, all succeed', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-pack-race-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Four parts of one tree, as splitByBytes cuts a sync: the same parents in each (f/, f/a/, f/a/b/, and sixty
  // folders below it with a file from each part, so every round has many chances to race).
  const text = (name: string, body: string): ArchiveEntry => ({ name, size: Buffer.byteLength(body), mtime: 0, mode: 0o644, source: Buffer.from(body) });
  const part = (k: number): ArchiveEntry[] => [
    ...Array.from({ length: 30 }, (_, i) => text(`f/a/b/${k}-${i}.txt`, `${i}\n`)),
    ...Array.from({ length: 60 }, (_, i) => text(`f/a/b/d${i}/e/${k}.txt`, `${i}\n`)),
  ];
  const archives = await Promise.all([0, 1, 2, 3].map((k) => archive(part(k))));
  for (let round = 0; round < 20; round++) {
    const out = join(dir, `out-${round}`);
    const errors = (await Promise.all(archives.map((a) => unpackAsync(a, out)))).filter((e) => e !== '');
    assert.deepEqual(errors, [], `round ${round}`);
    assert.equal(readFileSync(join(out, 'f/a/b/d59/e/3.txt'), 'utf8'), '59\n');
  }
});

test('the unpacker refuses a path outside its folder, an unknown entry type and an archive cut short', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-pack-bad-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const entry = (name: string, data = 'x'): Buffer =>
    Buffer.concat([packHeader({ name, size: data.length, mtime: 0, mode: 0o644, source: Buffer.from(data) }), Buffer.from(data)]);
  const out = join(dir, 'out');
  for (const name of ['../escape', 'f/../../escape', '/etc/escape', 'f//x']) {
    const r = unpack(Buffer.concat([entry(name), PACK_END]), out);
    assert.notEqual(r.status, 0, name);
    assert.match(r.stderr, /unsafe path/, name);
  }
  assert.ok(!existsSync(join(dir, 'escape')) && !existsSync('/etc/escape'));
  const odd = entry('f/x');
  odd.write('z', 0, 'latin1');
  assert.match(unpack(Buffer.concat([odd, PACK_END]), out).stderr, /unknown entry type/);
  const whole = Buffer.concat([entry('f/a', 'hello'), PACK_END]);
  for (const cut of [whole.length - 1, 40, 10]) {
    const r = unpack(whole.subarray(0, cut), join(dir, `cut-${cut}`));
    assert.notEqual(r.status, 0, `cut at ${cut}`);
    assert.match(r.stderr, /archive cut short/);
  }
  const ok = unpack(whole, join(dir, 'whole'));
  assert.equal(ok.status, 0, ok.stderr);
  assert.equal(readFileSync(join(dir, 'whole/f/a'), 'utf8'), 'hello');
});
