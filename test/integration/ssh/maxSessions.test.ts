// OpenSSH refuses session channels past MaxSessions (10 by default). Following a few runs holds three tails
// each, plus SFTP and the GPU sampler, so a busy window reaches it: channels beyond the limit go over a sibling
// connection instead of failing (or, for a tail, retrying in a tight loop).
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { tailFile } from '../../../src/core/ssh/tail';
import { writeFileAtomic } from '../../../src/core/ssh/remoteFiles';

let sshd: Sshd;
before(async () => {
  sshd = await startSshd({ extraConfig: ['MaxSessions 2'] });
});
after(async () => {
  await sshd.stop();
});

test('commands beyond MaxSessions run over a sibling connection; all finish with their own output', async () => {
  const host = new SshHost({ host: 'limited' }, clientFor(sshd, { alias: 'limited' }).options);
  try {
    const session = await host.session();
    const outs = await Promise.all(Array.from({ length: 7 }, (_, i) => session.run(`sleep 0.5; echo job-${i}`)));
    assert.deepEqual(
      outs,
      Array.from({ length: 7 }, (_, i) => `job-${i}\n`),
    );
    assert.ok(host.overflowConnects >= 3, `${host.overflowConnects} sibling connections for 7 channels at 2 per connection`);
    assert.equal(host.connects, 1, 'siblings are not reconnects');
  } finally {
    host.close();
  }
  // Closing the host closes its siblings too: no connection is left behind on the server.
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(sshd.killConnectionChildren(), 0);
});

test('six tails at once on a server that allows two sessions per connection: every byte arrives', async () => {
  const host = new SshHost({ host: 'limited' }, clientFor(sshd, { alias: 'limited' }).options);
  const dir = join(sshd.home, 'many-tails');
  mkdirSync(dir, { recursive: true });
  const contents = Array.from({ length: 6 }, (_, i) => Array.from({ length: 200 }, (_, j) => `file ${i} line ${j}\n`).join(''));
  contents.forEach((c, i) => writeFileSync(join(dir, `f${i}.log`), c));
  try {
    const got = await Promise.all(
      contents.map(async (_, i) => {
        let text = '';
        for await (const item of tailFile(host, join(dir, `f${i}.log`))) if (item.kind === 'data') text += item.data.toString();
        return text;
      }),
    );
    assert.deepEqual(got, contents);
  } finally {
    host.close();
  }
});

test('SFTP when the connection is full goes over a sibling too', async () => {
  const host = new SshHost({ host: 'limited' }, clientFor(sshd, { alias: 'limited' }).options);
  try {
    const session = await host.session();
    const busy = [session.run('sleep 1'), session.run('sleep 1')];
    await new Promise((r) => setTimeout(r, 200));
    const sftp = await session.sftp();
    await writeFileAtomic(sftp, join(sshd.home, 'via-sibling.txt'), 'written\n', 0o600);
    assert.equal(await session.run(`cat ${join(sshd.home, 'via-sibling.txt')}`), 'written\n');
    await Promise.all(busy);
  } finally {
    host.close();
  }
});
