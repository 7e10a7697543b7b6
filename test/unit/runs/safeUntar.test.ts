// The host's tar stream is untrusted. Archives made by GNU tar itself (long names through pax/GNU headers,
// nested folders, empty files) unpack exactly as `tar -x` would; hostile entries (symlink, hardlink, device,
// FIFO, absolute path, ../) stop the download and nothing is written outside the destination. The attack is
// shown first with the platform's tar where it lets the entry through.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { SafeUntar, UnsafeArchiveError } from '../../../src/core/runs/sync/safeUntar';

const base = mkdtempSync(join(tmpdir(), 'rft-untar-'));

function octal(n: number, w: number): string {
  return n.toString(8).padStart(w - 1, '0') + '\0';
}
function entry(name: string, type: string, body = '', link = '', mode = 0o644): Buffer {
  const h = Buffer.alloc(512, 0);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(mode, 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1');
  h.write(octal(0, 8), 116, 'latin1');
  h.write(octal(Buffer.byteLength(body), 12), 124, 'latin1');
  h.write(octal(0, 12), 136, 'latin1');
  h.write('        ', 148, 'latin1');
  h.write(type, 156, 'latin1');
  h.write(link, 157, 100, 'utf8');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'latin1');
  const data = Buffer.from(body);
  const pad = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([h, data, pad]);
}
const archive = (...parts: Buffer[]): Buffer => Buffer.concat([...parts, Buffer.alloc(1024)]);

function tree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (lstatSync(p).isDirectory()) {
        out[`${relative(dir, p)}/`] = '';
        walk(p);
      } else out[relative(dir, p)] = readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}

function unpack(buf: Buffer, dest: string, chunk = 333): SafeUntar {
  const u = new SafeUntar(dest);
  for (let i = 0; i < buf.length; i += chunk) u.write(buf.subarray(i, i + chunk));
  u.end();
  return u;
}

test('safeUntar: GNU tar archives (pax and GNU long names, nesting, empty files) unpack as tar -x does', () => {
  const src = join(base, 'src');
  const long = 'n'.repeat(150);
  for (const [p, c] of <Array<[string, string]>>[
    ['adapter_config.json', '{"r": 16}'],
    ['adapter_model.safetensors', 'x'.repeat(70_000)],
    [`deep/${long}/${long}.txt`, 'long'],
    ['empty', ''],
    ['ü/ñ.txt', 'utf8'],
  ]) {
    mkdirSync(join(src, p, '..'), { recursive: true });
    writeFileSync(join(src, p), c);
  }
  for (const format of ['pax', 'gnu']) {
    const tarball = execFileSync('tar', ['-C', src, `--format=${format}`, '-cf', '-', '.']);
    const ours = join(base, `ours-${format}`);
    const theirs = join(base, `theirs-${format}`);
    unpack(tarball, ours);
    mkdirSync(theirs);
    execFileSync('tar', ['-x', '-f', '-', '-C', theirs], { input: tarball });
    assert.deepEqual(tree(ours), tree(theirs), format);
  }
});

test('safeUntar: links, devices, absolute and ../ entries are refused and nothing lands outside', () => {
  const cases: Array<[string, Buffer, RegExp]> = [
    ['symlink', archive(entry('evil', '2', '', '/etc'), entry('evil/passwd', '0', 'x')), /symbolic link/],
    ['hardlink', archive(entry('h', '1', '', '/etc/shadow')), /hard link/],
    ['char device', archive(entry('dev', '3')), /character device/],
    ['fifo', archive(entry('fifo', '6')), /FIFO/],
    ['absolute', archive(entry('/tmp/rft-untar-abs-pwned', '0', 'x')), /absolute path/],
    ['dot-dot', archive(entry('a/../../rft-untar-dotdot-pwned', '0', 'x')), /leaves the folder/],
  ];
  for (const [name, buf, why] of cases) {
    const dest = join(base, `hostile-${name}`);
    assert.throws(
      () => unpack(buf, dest),
      (e: unknown) => e instanceof UnsafeArchiveError && why.test(e.message),
      name,
    );
  }
  assert.equal(existsSync('/tmp/rft-untar-abs-pwned'), false);
  assert.equal(existsSync(join(base, 'rft-untar-dotdot-pwned')), false);
  // The attack against the platform tar: GNU tar extracts the symlink, and a later entry through it would follow.
  const demo = join(base, 'gnu-demo');
  mkdirSync(demo);
  spawnSync('tar', ['-x', '-f', '-', '-C', demo], { input: archive(entry('evil', '2', '', '/etc')) });
  assert.ok(lstatSync(join(demo, 'evil')).isSymbolicLink(), 'tar -x lets a symlink from the host through');
});

test('safeUntar: setuid and world-writable bits are dropped; a truncated archive is an error', () => {
  const dest = join(base, 'modes');
  unpack(archive(entry('run.sh', '0', '#!/bin/sh\n', '', 0o4777)), dest);
  assert.equal(statSync(join(dest, 'run.sh')).mode & 0o7777, 0o755);
  assert.throws(() => unpack(entry('cut', '0', 'x'.repeat(2000)).subarray(0, 900), join(base, 'cut')), /ends inside a file/);
});
