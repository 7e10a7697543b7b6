// A first sync sends its files as several streams; the apply command waits on the host for every extra
// extractor before it renames anything (syncRemote.ts). When one of them fails, or is killed without a word,
// nothing may be applied: the sync fails with the extractor's reason, the target is not created, the staging
// folder is removed, and no process is left waiting on the host. A python3 wrapper first on the sshd's PATH
// makes the stream holding a chosen file fail after extracting it (as a full disk would), or kill its shell.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { syncWorkspace } from '../../../src/core/ssh/sync';

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

for (const how of ['fails', 'is killed'] as const) {
  test(`sync: an extra stream whose extractor ${how} applies nothing and leaves nothing behind`, { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-stream-fail-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    // Extracts as the real unpacker would, then fails (or kills the extractor's shell) if it wrote the poison file.
    const act = how === 'fails' ? 'echo "OSError: [Errno 28] No space left on device" >&2; exit 2' : 'kill -9 $PPID; exit 2';
    // The archive is kept aside as it streams: the stream that carried the poison file is the one that fails.
    // Only the sync's unpacker (packFormat.ts) is wrapped; any other python3 runs as it is.
    writeFileSync(
      join(bin, 'python3'),
      `#!/bin/sh\ncase "$*" in *"archive cut short"*) ;; *) exec /usr/bin/python3 "$@";; esac\n` +
        `tee "${dir}/archive.$$" | /usr/bin/python3 "$@"; rc=$?\n` +
        `if grep -aqF f/zz/zz-poison.bin "${dir}/archive.$$"; then ${act}; fi\nexit $rc\n`,
      { mode: 0o755 },
    );
    const sshd = await startSshd({ pathPrepend: [bin] });
    const host = new SshHost({ host: 'stream-fail' }, clientFor(sshd, { alias: 'stream-fail' }).options);
    cleanups.push(async () => {
      host.close();
      await sshd.stop();
    });
    const ws = join(dir, 'ws');
    for (let i = 0; i < 120; i++) {
      mkdirSync(join(ws, `d${i % 6}`), { recursive: true });
      writeFileSync(join(ws, `d${i % 6}`, `f${i}.txt`), `file ${i}\n`.repeat(50));
    }
    // Last in path order, so in the last stream: never the apply command's own.
    mkdirSync(join(ws, 'zz'));
    writeFileSync(join(ws, 'zz', 'zz-poison.bin'), 'x'.repeat(5000));
    const remoteDir = join(sshd.home, 'target');
    const session = await host.session();
    await assert.rejects(syncWorkspace(session, { localRoot: ws, remoteDir, streams: 4 }), (e: unknown) => {
      const msg = String(e);
      assert.match(msg, /remote extract failed/, msg);
      if (how === 'fails') assert.match(msg, /No space left on device/, msg);
      return true;
    });
    assert.ok(!existsSync(remoteDir), 'nothing was applied: the target was not created');
    // The apply command ends once it has seen the failure; give it its last few ms.
    const deadline = Date.now() + 5000;
    let left: string[] = [];
    let stages: string[] = [];
    do {
      await new Promise((r) => setTimeout(r, 100));
      stages = readdirSync(sshd.home).filter((n) => n.includes('.rft-stage-'));
      left = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes('.target.rft-stage-') && !l.includes('ps -eo'));
    } while ((stages.length > 0 || left.length > 0) && Date.now() < deadline);
    assert.deepEqual(
      stages,
      [],
      `the staging folder is removed: ${stages
        .map((s) =>
          execFileSync('find', [join(sshd.home, s)], { encoding: 'utf8' })
            .split('\n')
            .slice(0, 12)
            .join(' '),
        )
        .join('; ')}`,
    );
    assert.deepEqual(left, [], 'no extractor or apply command is left on the host');
    // The next sync, with the cause gone, sends everything.
    rmSync(join(ws, 'zz'), { recursive: true });
    const ok = await syncWorkspace(session, { localRoot: ws, remoteDir, streams: 4 });
    assert.equal(ok.uploaded, 120);
    assert.equal(readdirSync(remoteDir).length, 6);
  });
}
