// Answers kept per SSH connection (perConnection.ts): one question per connection however many callers,
// another connection asks again, a failed answer is not kept, and `forget` makes the next caller ask again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { perConnection } from '../../../src/core/ssh/perConnection';
import type { SshSession } from '../../../src/core/ssh/session';

const session = (): SshSession => ({}) as SshSession;

test('one question per connection, shared by callers at once and later; another connection asks its own', async () => {
  let asked = 0;
  const launcher = perConnection(async () => {
    asked++;
    await new Promise((r) => setTimeout(r, 5));
    return 'tmux';
  });
  const a = session();
  assert.deepEqual(await Promise.all([launcher(a), launcher(a)]), ['tmux', 'tmux']);
  assert.equal(await launcher(a), 'tmux');
  assert.equal(asked, 1);
  await launcher(session());
  assert.equal(asked, 2);
});

test('a failed answer is not kept, and forget() makes the next caller ask again', async () => {
  let asked = 0;
  const flaky = perConnection(async () => {
    asked++;
    if (asked === 1) throw new Error('connection blip');
    return asked;
  });
  const s = session();
  await assert.rejects(flaky(s), /connection blip/);
  assert.equal(await flaky(s), 2);
  assert.equal(await flaky(s), 2);
  flaky.forget(s);
  assert.equal(await flaky(s), 3);
});
