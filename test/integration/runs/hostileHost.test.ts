// A hostile host (a real sshd whose files and `tar` the test controls) against "Find Runs on Host" and the
// artifact download: run folders named to climb out of the extension's storage, a run.json-less junk folder,
// and a `tar` that answers the download with a symlink to the user's home followed by a file through it.
// Nothing may be created outside the storage and workspace folders.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { RunStore } from '../../../src/core/runs/store/runStore';
import { RunManager } from '../../../src/core/runs/lifecycle/runManager';
import { Ledger } from '../../../src/core/runs/store/ledger';
import { sshSync } from '../../../src/core/runs/sync/runSync';

const REPO = resolve(__dirname, '../../..');
let sshd: Sshd;
let base: string;
let bin: string;

before(async () => {
  base = mkdtempSync(join(tmpdir(), 'rft-hostile-'));
  bin = join(base, 'bin');
  mkdirSync(bin);
  sshd = await startSshd({ pathPrepend: [bin] });
});
after(async () => {
  await sshd?.stop();
});

function manager(storage: string): RunManager {
  writeFileSync(join(base, 'known_hosts'), `${sshd.knownHostsLine}\n`);
  return new RunManager({
    store: new RunStore(join(storage, 'runs.json')),
    storageDir: storage,
    runnerDir: join(REPO, 'python-runner'),
    runnerVersion: 'test',
    connectOptions: { hostKeyStore: join(base, 'store'), knownHostsFiles: [join(base, 'known_hosts')], agentSocket: null, sshConfigPath: join(base, 'none') },
    ledger: new Ledger(join(storage, 'instances.json')),
    sync: sshSync(join(storage, 'sync-cache')),
  });
}

test('hostile host: run ids that name paths are not taken from "Find Runs on Host"; stored records with them are dropped', async () => {
  const runs = join(sshd.home, '.remote-finetune', 'runs');
  for (const id of ['..', '.hidden', 'ok-run-1', 'a b', 'x;y']) {
    mkdirSync(join(runs, id), { recursive: true });
    writeFileSync(join(runs, id, 'wrapper.sh'), '#!/bin/sh\n');
    writeFileSync(join(runs, id, 'exit_code'), '0\n');
  }
  const storage = join(base, 'storage');
  const m = manager(storage);
  const added = await m.discover(`${sshd.user}@127.0.0.1:${sshd.port}`, { identityFile: sshd.userKeyPath });
  assert.deepEqual(added.map((r) => r.id).sort(), ['ok-run-1']);
  await m.dispose();
  assert.deepEqual(
    readdirSync(base).sort(),
    ['bin', 'known_hosts', 'storage', 'store'].filter((n) => existsSync(join(base, n))).sort(),
    'nothing created beside the storage',
  );
  // A run store edited to hold an id that climbs out: the record is dropped (with a problem), not used.
  writeFileSync(
    join(storage, 'runs.json'),
    JSON.stringify({
      version: 1,
      runs: [
        {
          id: '..',
          name: 'x',
          specPath: '',
          specHash: '',
          createdAt: '',
          updatedAt: '',
          status: 'completed',
          provider: 'ssh',
        },
      ],
    }),
  );
  const store = new RunStore(join(storage, 'runs.json'));
  assert.equal(store.get('..'), undefined);
  assert.ok(store.problems.length > 0);
});

test('hostile host: a download answered with a symlink and a file through it writes nothing outside the destination', async () => {
  const storage = join(base, 'storage2');
  const m = manager(storage);
  const added = await m.discover(`${sshd.user}@127.0.0.1:${sshd.port}`, { identityFile: sshd.userKeyPath });
  const run = added[0] ?? m.store.all()[0];
  assert.ok(run, 'a run to download from');
  const outside = join(base, 'outside');
  mkdirSync(outside);
  // The host's `tar` answers any archive request with: link -> <outside>, then link/pwned.
  writeFileSync(
    join(bin, 'tar'),
    `#!/usr/bin/env python3
import io, sys, tarfile
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
    l = tarfile.TarInfo("link"); l.type = tarfile.SYMTYPE; l.linkname = ${JSON.stringify(outside)}; t.addfile(l)
    data = b"owned"; f = tarfile.TarInfo("link/pwned"); f.size = len(data); t.addfile(f, io.BytesIO(data))
sys.stdout.buffer.write(buf.getvalue())
`,
    { mode: 0o755 },
  );
  const dest = join(base, 'ws', 'outputs', run.id, 'adapter');
  await assert.rejects(m.downloadArtifacts(run.id, '/tmp', dest), /refused: entry "link" is a symbolic link/);
  assert.equal(existsSync(join(outside, 'pwned')), false, "a file was written through the host's symlink");
  await m.dispose();
});
