// Downloads with large files in stripes (stripedDownload.ts) from a real sshd: identical bytes, mtimes and
// safe modes; the large file left out of the tar by literal name (GNU tar) and fetched by ranges; a host
// whose tar is not GNU tar sends everything in the tar; a host that lists a path outside the folder, or a
// size it does not deliver, gets the download refused with nothing written outside the destination.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { startSshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { downloadFolder } from '../../../src/core/runs/sync/artifacts';
import { STRIPE_BLOCK } from '../../../src/core/ssh/stripes';

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function put(root: string, rel: string, data: Buffer | string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), data);
}

/** A host with wrappers first on its PATH (each logs its arguments), and a checkpoint folder on it. */
async function hostWith(wrappers: Record<string, string>): Promise<{ host: SshHost; remote: string; home: string; log: string }> {
  const bin = mkdtempSync(join(tmpdir(), 'rft-dlbin-'));
  const log = join(bin, 'args.log');
  for (const [name, body] of Object.entries(wrappers)) {
    writeFileSync(join(bin, name), `#!/bin/sh\nprintf '%s %s\\n' ${name} "$*" >> '${log}'\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  }
  const sshd = await startSshd({ pathPrepend: [bin] });
  const host = new SshHost({ host: 'dl-host' }, clientFor(sshd, { alias: 'dl-host' }).options);
  cleanups.push(async () => {
    host.close();
    await sshd.stop();
    rmSync(bin, { recursive: true, force: true });
  });
  const remote = join(sshd.home, 'run/outputs/checkpoint-30');
  put(remote, 'model.safetensors', randomBytes(9 * STRIPE_BLOCK + 777));
  chmodSync(join(remote, 'model.safetensors'), 0o4755); // setuid on the host: never here
  utimesSync(join(remote, 'model.safetensors'), 1_700_000_123, 1_700_000_123);
  put(remote, 'optimizer.pt', randomBytes(5 * STRIPE_BLOCK));
  put(remote, 'adapter_config.json', '{"r": 8}\n');
  put(remote, 'nested/trainer_state.json', '{"global_step": 30}\n');
  return { host, remote, home: sshd.home, log };
}

function files(root: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name), `${rel}${e.name}/`);
      else out.push(`${rel}${e.name}`);
    }
  };
  walk(root, '');
  return out.sort();
}

test('GNU tar host: large files come in stripes, the rest in the tar; bytes, mtimes and safe modes', async () => {
  const { host, remote, log } = await hostWith({ tar: 'exec /bin/tar "$@"', dd: 'exec /bin/dd "$@"' });
  const dest = mkdtempSync(join(tmpdir(), 'rft-dl-'));
  cleanups.push(() => rmSync(dest, { recursive: true, force: true }));
  let last = 0;
  await downloadFolder(await host.session(), remote, dest, {
    stripeMinBytes: 4 * STRIPE_BLOCK,
    onProgress: (p) => {
      last = p.bytes;
    },
  });
  assert.deepEqual(files(dest), files(remote));
  for (const f of files(remote)) assert.ok(readFileSync(join(dest, f)).equals(readFileSync(join(remote, f))), f);
  assert.equal(Math.floor(statSync(join(dest, 'model.safetensors')).mtimeMs / 1000), 1_700_000_123);
  assert.equal(statSync(join(dest, 'model.safetensors')).mode & 0o7777, 0o755, 'setuid dropped');
  const calls = readFileSync(log, 'utf8');
  assert.match(
    calls,
    /tar -C \S+ --no-wildcards --anchored --exclude=\.\/(model\.safetensors|optimizer\.pt) --exclude=\.\/(model\.safetensors|optimizer\.pt) -cf - \./,
  );
  assert.ok((calls.match(/^dd if=/gm) ?? []).length >= 4, `ranges by dd:\n${calls}`);
  // Progress counted each byte once: the large files' bytes plus the (small) tar.
  assert.ok(last >= 14 * STRIPE_BLOCK + 777 && last < 14 * STRIPE_BLOCK + 64 * 1024, `progress ${last}`);
});

test('a host whose tar is not GNU tar sends everything in the tar (no exclude it could misread)', async (t) => {
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => existsSync(p));
  if (!busybox) {
    t.skip('busybox is not installed here (the preflight installs it)');
    return;
  }
  const { host, remote, log } = await hostWith({ tar: `exec ${busybox} tar "$@"` });
  const dest = mkdtempSync(join(tmpdir(), 'rft-dl-bb-'));
  cleanups.push(() => rmSync(dest, { recursive: true, force: true }));
  await downloadFolder(await host.session(), remote, dest, { stripeMinBytes: 4 * STRIPE_BLOCK });
  for (const f of files(remote)) assert.ok(readFileSync(join(dest, f)).equals(readFileSync(join(remote, f))), f);
  assert.doesNotMatch(readFileSync(log, 'utf8'), /--exclude/);
});

test('a host listing a large file outside the folder, or delivering fewer bytes than listed, is refused', async () => {
  // find answers with a record naming ../../escape; the files are real, the listing is the attack.
  const { host, remote } = await hostWith({ find: `printf '%s 644 1700000000.5 ../../escape\\0' ${10 * STRIPE_BLOCK}` });
  const outer = mkdtempSync(join(tmpdir(), 'rft-dl-outer-'));
  cleanups.push(() => rmSync(outer, { recursive: true, force: true }));
  const dest = join(outer, 'a', 'b');
  await assert.rejects(
    downloadFolder(await host.session(), remote, dest, { stripeMinBytes: 4 * STRIPE_BLOCK }),
    /refused: entry "\.\.\/\.\.\/escape": leaves the folder \(\.\.\)/,
  );
  assert.equal(existsSync(join(outer, 'escape')), false);

  const liar = await hostWith({ find: `printf '%s 644 1700000000 model.safetensors\\0' ${20 * STRIPE_BLOCK}` });
  const dest2 = mkdtempSync(join(tmpdir(), 'rft-dl-liar-'));
  cleanups.push(() => rmSync(dest2, { recursive: true, force: true }));
  await assert.rejects(
    downloadFolder(await liar.host.session(), liar.remote, dest2, { stripeMinBytes: 4 * STRIPE_BLOCK }),
    /reading model\.safetensors at \d+ from the host failed/,
  );
});
