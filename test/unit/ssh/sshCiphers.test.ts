// What OpenSSH refuses in Ciphers we refuse too (the differential test covers what it accepts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { effectiveCiphers, OPENSSH_DEFAULT_CIPHERS } from '../../../src/core/ssh/sshCiphers';

test('unset means the default; patterns only after -; unknown names and empty results are errors', () => {
  assert.deepEqual(effectiveCiphers(undefined), {});
  assert.match(effectiveCiphers('aes*-ctr').error!, /Bad SSH2 cipher spec/);
  assert.match(effectiveCiphers('+aes128-foo').error!, /unknown cipher aes128-foo/);
  assert.match(effectiveCiphers('-*').error!, /leaves no cipher/);
  assert.match(effectiveCiphers('  ').error!, /empty/);
  assert.deepEqual(effectiveCiphers('aes128-ctr,aes128-ctr,aes256-ctr').ciphers, ['aes128-ctr', 'aes256-ctr']);
  assert.deepEqual(effectiveCiphers('^aes128-ctr').ciphers, ['aes128-ctr', ...OPENSSH_DEFAULT_CIPHERS.filter((c) => c !== 'aes128-ctr')]);
});
