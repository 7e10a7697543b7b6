// Issue 30.7: startDetached takes the wrapper's pid from what the host prints, and like the status, stop and
// tail code it takes only a number above 1: `kill -TERM -1` is every process the user may signal and
// `kill 0` the caller's own group. The session here is a stand-in that accepts every write and answers
// the start command with the given pid, so only startDetached's own reading is tested.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SshSession } from '../../../src/core/ssh/session';
import { startDetached } from '../../../src/core/ssh/detachedJob';

type Callback = (err?: Error, handle?: Buffer) => void;

function sessionAnswering(pidText: string): SshSession {
  const last = (args: unknown[]): Callback => args[args.length - 1] as Callback;
  const sftp = {
    open: (...a: unknown[]) => last(a)(undefined, Buffer.from('h')),
    write: (...a: unknown[]) => last(a)(),
    fchmod: (...a: unknown[]) => last(a)(),
    close: (...a: unknown[]) => last(a)(),
    ext_openssh_rename: (...a: unknown[]) => last(a)(),
  };
  const answer = (stdout: string): { code: number; signal: undefined; stdout: Buffer; stderr: Buffer } => ({
    code: 0,
    signal: undefined,
    stdout: Buffer.from(stdout),
    stderr: Buffer.alloc(0),
  });
  return {
    home: async () => '/home/u',
    sftp: async () => sftp,
    run: async () => 'setsid\n',
    exec: async (command: string) => answer(command.includes('wrapper.sh') ? `${pidText}\n` : ''),
  } as unknown as SshSession;
}

test('startDetached: a pid of 1, 0 or below from the host is no run process', async () => {
  for (const pid of ['1', '0', '-1', '-4242']) {
    await assert.rejects(
      startDetached(sessionAnswering(pid), { runId: 'r1', command: 'true', launcher: 'setsid', root: '/srv/rft' }),
      /run r1 did not start with setsid/,
      `pid ${pid}`,
    );
  }
});

test('startDetached: a pid above 1 is the run', async () => {
  const started = await startDetached(sessionAnswering('4242'), { runId: 'r1', command: 'true', launcher: 'setsid', root: '/srv/rft' });
  assert.equal(started.pid, 4242);
  assert.equal(started.runDir, '/srv/rft/runs/r1');
});
