// Issue 30.7: what a host sends back as a download is bounded (entries; bytes, about what it said the folder
// holds) and a download that fails takes back the files it wrote, so a half-written checkpoint is never left
// to be taken for a whole one. The host is test/support/hostileHost.ts (an ssh2 server answering each command
// with what the test gives it); the tar streams are built here, entry by entry.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHostileHost, endless, reply } from '../../support/hostileHost';
import type { HostileHost, Route } from '../../support/hostileHost';
import { connect } from '../../../src/core/ssh/session';
import { downloadByteCap, downloadFolder } from '../../../src/core/runs/sync/artifacts';
import { MAX_DOWNLOAD_BYTES } from '../../../src/core/runs/sync/safeUntar';

const HUNG = { timeout: 20_000 };
let host: HostileHost;
const scratch = mkdtempSync(join(tmpdir(), 'rft-download-caps-'));
before(async () => {
  host = await startHostileHost();
});
after(async () => {
  await host?.close();
  rmSync(scratch, { recursive: true, force: true });
});

function octal(n: number, w: number): string {
  return n.toString(8).padStart(w - 1, '0') + '\0';
}

/** One ustar entry; `declared` is the size the header claims (default: the body's). */
function entry(name: string, type: string, body: Buffer | string = '', declared?: number): Buffer {
  const data = typeof body === 'string' ? Buffer.from(body) : body;
  const h = Buffer.alloc(512, 0);
  h.write(name, 0, 100, 'utf8');
  h.write(octal(0o644, 8), 100, 'latin1');
  h.write(octal(0, 8), 108, 'latin1');
  h.write(octal(0, 8), 116, 'latin1');
  h.write(octal(declared ?? data.length, 12), 124, 'latin1');
  h.write(octal(0, 12), 136, 'latin1');
  h.write('        ', 148, 'latin1');
  h.write(type, 156, 'latin1');
  h.write(type === '2' ? '/etc/passwd' : '', 157, 100, 'utf8');
  h.write('ustar\0', 257, 'latin1');
  h.write('00', 263, 'latin1');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(octal(sum, 7) + ' ', 148, 'latin1');
  return Buffer.concat([h, data, Buffer.alloc((512 - (data.length % 512)) % 512)]);
}
const archive = (...parts: Buffer[]): Buffer => Buffer.concat([...parts, Buffer.alloc(1024)]);

/** The size probe's answer (`du` total, tar flavour, large-file listing) and the tar stream. */
function routes(probe: string, tar: Route['attack']): Route[] {
  return [
    { match: /du -sb/, attack: reply(probe) },
    { match: /tar -C/, attack: tar },
  ];
}

async function download(rs: Route[], name: string, limits?: { maxEntries?: number; maxBytes?: number }): Promise<{ error?: string; dir: string }> {
  host.setRoutes(rs);
  const dir = join(scratch, name);
  const s = await connect({ host: host.alias }, host.options);
  try {
    await downloadFolder(s, '/home/hostile/out', dir, limits ? { limits } : {});
    return { dir };
  } catch (err) {
    return { error: (err as Error).message, dir };
  } finally {
    s.close();
  }
}

function filesIn(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(dir, f)).isFile());
}

test('a download refused part-way removes the files it had written', HUNG, async () => {
  const tar = archive(entry('adapter_model.safetensors', '0', Buffer.alloc(3000, 7)), entry('adapter_config.json', '0', '{}'), entry('evil', '2'));
  const r = await download(routes('4000\nother\n', reply(tar)), 'partial');
  assert.match(r.error ?? '', /refused: entry "evil" is a symbolic link/);
  assert.deepEqual(filesIn(r.dir), [], 'no half of the download is left');
});

test('a file larger than the host said the folder holds is refused at its header, before a byte is written', HUNG, async () => {
  const tar = Buffer.concat([entry('ok.json', '0', '{}'), entry('checkpoint.bin', '0', '', 2 ** 30).subarray(0, 512), Buffer.alloc(64 * 1024)]);
  const r = await download(routes('1000\nother\n', reply(tar)), 'big');
  assert.match(r.error ?? '', /refused: more than \d+ bytes of content/);
  assert.deepEqual(filesIn(r.dir), []);
  assert.equal(downloadByteCap(1000), 1250 + 256 * 1024 * 1024);
  assert.equal(downloadByteCap(undefined), MAX_DOWNLOAD_BYTES);
  assert.equal(downloadByteCap(2 ** 50), MAX_DOWNLOAD_BYTES);
});

test('an endless stream of entries stops at the entry cap', HUNG, async () => {
  const r = await download(routes('1000\nother\n', endless(entry('x', '0', 'hi').toString('latin1'))), 'endless', { maxEntries: 500 });
  assert.match(r.error ?? '', /refused: more than 500 entries/);
  assert.deepEqual(filesIn(r.dir), []);
});

test('the byte cap can be set; a download within the caps is kept whole', HUNG, async () => {
  const tar = archive(entry('a.bin', '0', Buffer.alloc(6000, 1)));
  const over = await download(routes('6000\nother\n', reply(tar)), 'capped', { maxBytes: 4096 });
  assert.match(over.error ?? '', /more than 4096 bytes/);
  assert.deepEqual(filesIn(over.dir), []);
  const ok = await download(routes('6000\nother\n', reply(tar)), 'whole');
  assert.equal(ok.error, undefined);
  assert.deepEqual(filesIn(ok.dir), ['a.bin']);
});

test('a large-file listing past the caps is refused before any file is made', HUNG, async () => {
  const probe = `20000000000000\ngnu\n10000000000000 644 1700000000 model.safetensors\0`;
  const r = await download(routes(probe, reply(archive())), 'listing');
  assert.match(r.error ?? '', /refused: the host lists 1 large files of 10000000000000 bytes/);
  assert.deepEqual(filesIn(r.dir), []);
});
