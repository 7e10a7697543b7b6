// A host's $HOME becomes part of every remote path and of progress text ("syncing the runner to …"); only a plain
// absolute path is taken. The probe leaves anything else out, and asking again refuses it with the host named.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyProbeOutput } from '../../../src/core/ssh/loginShell';
import { checkedRemoteHome } from '../../../src/core/ssh/remoteHome';

const HOSTILE = [
  '/home/u/[fix](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22id%5Cn%22%7D)',
  '/home/u\u001b[2J',
  '/home/u\rsyncing done',
  '/home/\u202eu',
  '/home/u/../../etc',
  'home/u',
  `/${'a'.repeat(5000)}`,
];

test('the login-shell probe takes $HOME only when it is a plain absolute path', () => {
  for (const h of ['/home/u', '/home/a b', '/root', '/Users/josé', '/home/u.name+x@corp']) {
    assert.equal(classifyProbeOutput(`rft-sh 42 \nrft-home ${h}\n`).home, h, h);
  }
  for (const h of HOSTILE) {
    const p = classifyProbeOutput(`rft-sh 42 \nrft-home ${h}\n`);
    assert.equal(p.home, undefined, JSON.stringify(h));
    assert.equal(p.shell, 'posix', 'the shell is still told apart');
  }
});

test('a $HOME that is not a plain absolute path is refused with a message naming the host', () => {
  assert.equal(checkedRemoteHome('gpu1', '/home/u'), '/home/u');
  for (const h of HOSTILE) {
    assert.throws(
      () => checkedRemoteHome('gpu1', h),
      (e: Error) => /^\$HOME on gpu1 is not a plain absolute path/.test(e.message) && /^[\x20-\x7e]*$/.test(e.message) && !e.message.includes(']('),
      JSON.stringify(h),
    );
  }
});
