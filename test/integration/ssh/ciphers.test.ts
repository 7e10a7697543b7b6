// ssh_config's Ciphers reaches the handshake: the cipher negotiated with a real sshd is the one the config
// allows (and what the session reports), a config whose ciphers this client lacks is refused before any
// connection, and with no Ciphers line ssh2's own preference stands.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { connect, SshFatalError } from '../../../src/core/ssh/session';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';

let sshd: Sshd;
before(async () => {
  sshd = await startSshd();
});
after(async () => {
  await sshd.stop();
});

for (const cipher of ['aes256-ctr', 'aes128-gcm@openssh.com', 'chacha20-poly1305@openssh.com']) {
  test(`Ciphers ${cipher} in ssh_config is the cipher negotiated`, async () => {
    const c = clientFor(sshd, { extraConfig: [`  Ciphers ${cipher}`] });
    const s = await connect({ host: c.alias }, c.options);
    try {
      assert.equal(s.cipher, cipher);
      assert.equal((await s.exec('echo ok')).stdout.toString().trim(), 'ok');
    } finally {
      s.close();
    }
  });
}

test('without Ciphers, ssh2 keeps its own order (AES-GCM first on this CPU)', async () => {
  const c = clientFor(sshd);
  const s = await connect({ host: c.alias }, c.options);
  try {
    assert.match(s.cipher ?? '', /^(aes128-gcm@openssh\.com|chacha20-poly1305@openssh\.com)$/);
  } finally {
    s.close();
  }
});

test('a Ciphers value OpenSSH refuses is refused as a config error, with the reason', async () => {
  const c = clientFor(sshd, { extraConfig: ['  Ciphers aes*-ctr'] });
  await assert.rejects(
    connect({ host: c.alias }, c.options),
    (e: unknown) => e instanceof SshFatalError && e.code === 'config' && /Bad SSH2 cipher spec/.test(e.message),
  );
});
