// Connecting to a real OpenSSH sshd on loopback: key, agent and encrypted-key auth, host key accept/refuse,
// a changed host key on the same port, ProxyJump through a second sshd, keepalive and reconnect.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { startSshd, sshKeygen, opensshArgs } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { connect, SshFatalError } from '../../../src/core/ssh/session';
import { SshHost } from '../../../src/core/ssh/reconnect';

const servers: Sshd[] = [];
const agents: ChildProcess[] = [];
after(async () => {
  for (const a of agents) a.kill();
  for (const s of servers) await s.stop();
});

async function server(opts: Parameters<typeof startSshd>[0] = {}): Promise<Sshd> {
  const s = await startSshd(opts);
  servers.push(s);
  return s;
}

/** Starts a throwaway ssh-agent on `sock` (stopped after the tests), holding `keys` in the order given. */
async function agentAt(sock: string, keys: readonly string[] = []): Promise<NodeJS.ProcessEnv> {
  agents.push(spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' }));
  for (let i = 0; i < 100 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 50));
  const env = { ...process.env, SSH_AUTH_SOCK: sock };
  for (const k of keys) execFileSync('ssh-add', [k], { env, stdio: 'ignore' });
  return env;
}

test('key auth through an ssh config alias runs a command', async () => {
  const s = await server();
  const c = clientFor(s);
  const session = await connect({ host: c.alias }, c.options);
  try {
    assert.equal(await session.run('echo hello; echo "$HOME"'), `hello\n${s.home}\n`);
    assert.equal(await session.home(), s.home);
  } finally {
    session.close();
  }
});

test('ssh-agent auth (SSH_AUTH_SOCK) with no identity file configured', async () => {
  const s = await server();
  const c = clientFor(s);
  const sock = join(c.dir, 'agent.sock');
  await agentAt(sock, [s.userKeyPath]);
  writeFileSync(c.sshConfigPath, `Host agent-only\n  HostName 127.0.0.1\n  Port ${s.port}\n  User ${s.user}\n`);
  // Without the agent nothing can authenticate: proves the agent is what logs in below.
  await assert.rejects(
    connect({ host: 'agent-only' }, { ...c.options, agentSocket: null }),
    (e: unknown) => e instanceof SshFatalError && e.code === 'auth-failed',
  );
  const session = await connect({ host: 'agent-only' }, { ...c.options, agentSocket: sock });
  assert.equal(await session.run('echo via-agent'), 'via-agent\n');
  session.close();
});

test('IdentityAgent (a 1Password-style agent socket) is used over SSH_AUTH_SOCK; IdentityAgent none uses no agent', async () => {
  const s = await server();
  const c = clientFor(s);
  const sock = join(c.dir, 'other-agent.sock');
  await agentAt(sock, [s.userKeyPath]);
  writeFileSync(
    c.sshConfigPath,
    `Host via-identity-agent\n  HostName 127.0.0.1\n  Port ${s.port}\n  User ${s.user}\n  IdentityAgent ${sock}\n` +
      `Host agent-off\n  HostName 127.0.0.1\n  Port ${s.port}\n  User ${s.user}\n  IdentityAgent none\n`,
  );
  // No explicit agentSocket: the choice is ssh_config's, as it is inside VS Code.
  const { agentSocket: _unused, ...fromConfig } = c.options;
  const saved = process.env.SSH_AUTH_SOCK;
  try {
    process.env.SSH_AUTH_SOCK = join(c.dir, 'no-such-agent.sock');
    const session = await connect({ host: 'via-identity-agent' }, fromConfig);
    assert.equal(await session.run('echo via-identity-agent'), 'via-identity-agent\n');
    session.close();
    process.env.SSH_AUTH_SOCK = sock;
    await assert.rejects(connect({ host: 'agent-off' }, fromConfig), (e: unknown) => e instanceof SshFatalError && e.code === 'auth-failed');
  } finally {
    if (saved === undefined) delete process.env.SSH_AUTH_SOCK;
    else process.env.SSH_AUTH_SOCK = saved;
  }
});

test('IdentitiesOnly: the agent signs for the configured key (an encrypted file, no passphrase asked) and offers no other', async () => {
  const s = await server();
  const c = clientFor(s);
  const sock = join(c.dir, 'agent-io.sock');
  const env = await agentAt(sock);
  // Six keys the server does not know come first in the agent: offered all, they exhaust sshd's MaxAuthTries
  // (6) before the right one, which is what IdentitiesOnly exists to prevent.
  for (let i = 0; i < 6; i++) {
    const k = join(c.dir, `other_${i}`);
    sshKeygen(k);
    execFileSync('ssh-add', [k], { env, stdio: 'ignore' });
  }
  execFileSync('ssh-add', [s.userKeyPath], { env, stdio: 'ignore' });
  // The config names an encrypted copy of the authorized key (same public half).
  const enc = join(c.dir, 'enc_copy');
  writeFileSync(enc, readFileSync(s.userKeyPath), { mode: 0o600 });
  execFileSync('ssh-keygen', ['-q', '-p', '-P', '', '-N', 'secret words', '-f', enc], { stdio: 'ignore' });
  writeFileSync(`${enc}.pub`, readFileSync(`${s.userKeyPath}.pub`));
  writeFileSync(
    c.sshConfigPath,
    `Host io\n  HostName 127.0.0.1\n  Port ${s.port}\n  User ${s.user}\n  IdentityFile ${enc}\n  IdentitiesOnly yes\n` +
      `Host all-keys\n  HostName 127.0.0.1\n  Port ${s.port}\n  User ${s.user}\n`,
  );
  const asked: string[] = [];
  const opts = {
    ...c.options,
    agentSocket: sock,
    passphraseCache: new Map<string, string>(),
    askPassphrase: async (p: string): Promise<undefined> => {
      asked.push(p);
      return undefined;
    },
  };
  const session = await connect({ host: 'io' }, opts);
  assert.equal(await session.run('echo only-the-configured-key'), 'only-the-configured-key\n');
  session.close();
  assert.deepEqual(asked, [], 'the agent signed: no passphrase prompt');
  // Control: without IdentitiesOnly every agent key is offered and the server gives up first.
  await assert.rejects(connect({ host: 'all-keys' }, opts), (e: unknown) => e instanceof Error);
});

test('encrypted key: the passphrase is asked, a wrong one asked again, then remembered in memory', async () => {
  const s = await server();
  const c = clientFor(s);
  const keyPath = join(c.dir, 'enc_key');
  sshKeygen(keyPath, 'correct horse');
  s.authorize(readFileSync(`${keyPath}.pub`, 'utf8'));
  writeFileSync(c.sshConfigPath, `Host enc\n  HostName 127.0.0.1\n  Port ${s.port}\n  User ${s.user}\n  IdentityFile ${keyPath}\n  IdentitiesOnly yes\n`);
  const asked: string[] = [];
  const answers = ['wrong', 'correct horse'];
  const cache = new Map<string, string>();
  const opts = {
    ...c.options,
    passphraseCache: cache,
    askPassphrase: async (p: string): Promise<string | undefined> => {
      asked.push(p);
      return answers.shift();
    },
  };
  const s1 = await connect({ host: 'enc' }, opts);
  assert.equal(await s1.run('echo ok'), 'ok\n');
  s1.close();
  assert.deepEqual(asked, [keyPath, keyPath]);
  const s2 = await connect({ host: 'enc' }, opts);
  s2.close();
  assert.equal(asked.length, 2, 'the second connection used the in-memory passphrase');
  // Declining the prompt means that key is skipped and auth fails cleanly.
  await assert.rejects(connect({ host: 'enc' }, { ...c.options, passphraseCache: new Map(), askPassphrase: async () => undefined }), SshFatalError);
});

test('unknown host key: the SHA256 fingerprint is shown once; accept remembers, refuse and no-prompt fail', async () => {
  const s = await server();
  const c = clientFor(s, { trust: false });
  await assert.rejects(connect({ host: c.alias }, c.options), (e: unknown) => e instanceof SshFatalError && e.code === 'host-key-rejected');
  const refusedPrompts: string[] = [];
  await assert.rejects(
    connect(
      { host: c.alias },
      {
        ...c.options,
        confirmHostKey: async (p) => {
          refusedPrompts.push(p.fingerprint);
          return false;
        },
      },
    ),
    SshFatalError,
  );
  assert.deepEqual(refusedPrompts, [s.hostKeyFingerprint]);
  assert.equal(existsSync(c.options.hostKeyStore), false, 'a refused key is not stored');
  const prompts: Array<{ host: string; port: number; fingerprint: string }> = [];
  const opts = {
    ...c.options,
    confirmHostKey: async (p: { host: string; port: number; fingerprint: string }): Promise<boolean> => {
      prompts.push(p);
      return true;
    },
  };
  const s1 = await connect({ host: c.alias }, opts);
  s1.close();
  assert.deepEqual(prompts, [{ host: '127.0.0.1', port: s.port, keyType: 'ssh-ed25519', fingerprint: s.hostKeyFingerprint }]);
  const s2 = await connect({ host: c.alias }, opts);
  s2.close();
  assert.equal(prompts.length, 1, 'asked once: the accepted key is now in the extension store');
});

test('the connect deadline does not count time spent at a prompt; a server that never speaks times out', async () => {
  const s = await server();
  const c = clientFor(s, { trust: false });
  // A careful user compares the fingerprint for longer than the whole handshake may take.
  const slowYes = async (): Promise<boolean> => {
    await new Promise((r) => setTimeout(r, 1200));
    return true;
  };
  const session = await connect({ host: c.alias }, { ...c.options, readyTimeoutMs: 400, confirmHostKey: slowYes });
  assert.equal(await session.run('echo after-a-slow-prompt'), 'after-a-slow-prompt\n');
  session.close();
  // A listener that accepts and never sends a banner: the deadline still holds.
  const silent = createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as AddressInfo).port;
  writeFileSync(c.sshConfigPath, `Host silent\n  HostName 127.0.0.1\n  Port ${port}\n  User ${s.user}\n  IdentityFile ${s.userKeyPath}\n`);
  const t0 = Date.now();
  await assert.rejects(
    connect({ host: 'silent' }, { ...c.options, readyTimeoutMs: 300 }),
    /Timed out after 300 ms waiting for the SSH handshake with 127\.0\.0\.1/,
  );
  assert.ok(Date.now() - t0 < 3000, `gave up after ${Date.now() - t0} ms`);
  silent.close();
});

test('changed host key on the same port is refused naming the host and both fingerprints', async () => {
  const first = await server();
  const c = clientFor(first);
  const ok = await connect({ host: c.alias }, c.options);
  ok.close();
  const oldFp = first.hostKeyFingerprint;
  const port = first.port;
  await first.stop();
  const impostor = await server({ port });
  assert.notEqual(impostor.hostKeyFingerprint, oldFp);
  let prompted = false;
  await assert.rejects(
    connect(
      { host: c.alias },
      {
        ...c.options,
        confirmHostKey: async () => {
          prompted = true;
          return true;
        },
      },
    ),
    (e: unknown) => {
      assert.ok(e instanceof SshFatalError && e.code === 'host-key-changed', String(e));
      assert.match(e.message, new RegExp(`\\[127\\.0\\.0\\.1\\]:${port}`));
      assert.ok(e.message.includes(oldFp) && e.message.includes(impostor.hostKeyFingerprint), e.message);
      return true;
    },
  );
  assert.equal(prompted, false, 'a changed key is never offered for acceptance');
});

test('a host known only by its RSA key is checked against that key (known types are offered first, as OpenSSH does)', async () => {
  const keys = mkdtempSync(join(tmpdir(), 'rft-hostkeys-'));
  const rsa = join(keys, 'host_rsa');
  execFileSync('ssh-keygen', ['-q', '-t', 'rsa', '-b', '2048', '-N', '', '-f', rsa], { stdio: 'ignore' });
  const s = await server({ extraConfig: [`HostKey ${rsa}`] });
  const c = clientFor(s, { trust: false });
  const rsaPub = readFileSync(`${rsa}.pub`, 'utf8').trim().split(/\s+/);
  writeFileSync(c.knownHostsPath, `[127.0.0.1]:${s.port} ${rsaPub[0]} ${rsaPub[1]}\n`);
  let prompted = false;
  const opts = {
    ...c.options,
    confirmHostKey: async (): Promise<boolean> => {
      prompted = true;
      return true;
    },
  };
  const ok = await connect({ host: c.alias }, opts);
  assert.equal(await ok.run('echo rsa-known'), 'rsa-known\n');
  ok.close();
  assert.equal(prompted, false, "the recorded RSA key was used: no prompt for the server's ed25519 key");
  // A different RSA key on record: refused as changed, never offered for acceptance.
  const other = join(keys, 'other_rsa');
  execFileSync('ssh-keygen', ['-q', '-t', 'rsa', '-b', '2048', '-N', '', '-f', other], { stdio: 'ignore' });
  const otherPub = readFileSync(`${other}.pub`, 'utf8').trim().split(/\s+/);
  writeFileSync(c.knownHostsPath, `[127.0.0.1]:${s.port} ${otherPub[0]} ${otherPub[1]}\n`);
  await assert.rejects(connect({ host: c.alias }, opts), (e: unknown) => e instanceof SshFatalError && e.code === 'host-key-changed');
  assert.equal(prompted, false);
});

test('StrictHostKeyChecking from ssh_config: yes refuses an unknown key unasked, accept-new records it unasked, a changed key is refused in every mode', async () => {
  const s = await server();
  let prompted = 0;
  const ask = {
    confirmHostKey: async (): Promise<boolean> => {
      prompted++;
      return true;
    },
  };
  const yes = clientFor(s, { trust: false, extraConfig: ['  StrictHostKeyChecking yes'] });
  await assert.rejects(
    connect({ host: yes.alias }, { ...yes.options, ...ask }),
    (e: unknown) => e instanceof SshFatalError && e.code === 'host-key-rejected' && /StrictHostKeyChecking is yes/.test(e.message),
  );
  assert.equal(prompted, 0, 'yes never asks');
  const acceptNew = clientFor(s, { trust: false, extraConfig: ['  StrictHostKeyChecking accept-new'] });
  const first = await connect({ host: acceptNew.alias }, { ...acceptNew.options, ...ask });
  first.close();
  assert.equal(prompted, 0, 'accept-new does not ask');
  assert.match(readFileSync(acceptNew.options.hostKeyStore, 'utf8'), /ssh-ed25519 /, 'and records the key');
  // The same port now answers with another host key: refused under accept-new and no alike.
  const other = await server();
  for (const mode of ['accept-new', 'no']) {
    const c = clientFor(other, { trust: false, extraConfig: [`  StrictHostKeyChecking ${mode}`] });
    const [type, b64] = s.knownHostsLine.split(' ').slice(1);
    writeFileSync(c.knownHostsPath, `[127.0.0.1]:${other.port} ${type} ${b64}\n`); // the first server's key, on record for the second
    await assert.rejects(
      connect({ host: c.alias }, { ...c.options, ...ask }),
      (e: unknown) => e instanceof SshFatalError && e.code === 'host-key-changed',
      mode,
    );
  }
  assert.equal(prompted, 0);
});

test('provisioned instances: a pinned host key connects unasked, any other key is refused; keys are kept per instance, so a recycled address is a new host', async () => {
  const first = await server();
  const c = clientFor(first, { trust: false });
  let prompted = 0;
  const opts = {
    ...c.options,
    confirmHostKey: async (): Promise<boolean> => {
      prompted++;
      return true;
    },
  };
  const pin = first.knownHostsLine.split(' ').slice(1).join(' ');
  const a = await connect({ host: c.alias, hostKeyAlias: 'rft-ec2-i-0aaa', pinnedHostKeys: [pin] }, opts);
  a.close();
  assert.equal(prompted, 0);
  assert.match(readFileSync(c.options.hostKeyStore, 'utf8'), /ssh-ed25519/, 'recorded under the instance alias for reattaching');
  const again = await connect({ host: c.alias, hostKeyAlias: 'rft-ec2-i-0aaa' }, opts); // after a reload: no pin, the store knows it
  again.close();
  assert.equal(prompted, 0);
  // Another key than the pinned one (a different machine answering at that address): refused.
  sshKeygen(join(c.dir, 'other_host_key'));
  const otherPin = readFileSync(join(c.dir, 'other_host_key.pub'), 'utf8').trim().split(/\s+/).slice(0, 2).join(' ');
  await assert.rejects(
    connect({ host: c.alias, hostKeyAlias: 'rft-ec2-i-0bbb', pinnedHostKeys: [otherPin] }, opts),
    (e: unknown) => e instanceof SshFatalError && e.code === 'host-key-changed' && /not the one this instance was launched with/.test(e.message),
  );
  // The address is recycled: a new instance (another host key) on the same IP and port, under its own alias.
  const userKey = join(c.dir, 'user_key');
  writeFileSync(userKey, readFileSync(first.userKeyPath), { mode: 0o600 });
  writeFileSync(c.sshConfigPath, readFileSync(c.sshConfigPath, 'utf8').replace(first.userKeyPath, userKey));
  const pub = readFileSync(`${first.userKeyPath}.pub`, 'utf8');
  await first.stop();
  const second = await server({ port: first.port, authorizedKeys: [pub] });
  const pin2 = second.knownHostsLine.split(' ').slice(1).join(' ');
  const b = await connect({ host: c.alias, hostKeyAlias: 'rft-ec2-i-0ccc', pinnedHostKeys: [pin2] }, opts);
  b.close();
  // Without per-instance aliases the same address would read as a CHANGED key (what users saw before):
  rememberHostKeyLine(c.options.hostKeyStore, first.port, pin);
  await assert.rejects(connect({ host: c.alias }, opts), (e: unknown) => e instanceof SshFatalError && e.code === 'host-key-changed');
  assert.equal(prompted, 0);
});

function rememberHostKeyLine(store: string, port: number, typeAndKey: string): void {
  writeFileSync(store, readFileSync(store, 'utf8') + `[127.0.0.1]:${port} ${typeAndKey}\n`);
}

test('GlobalKnownHostsFile (from ssh_config) vouches for a host', async () => {
  const s = await server();
  const c = clientFor(s, { trust: false });
  const global = join(c.dir, 'ssh_known_hosts');
  writeFileSync(global, `${s.knownHostsLine}\n`);
  writeFileSync(c.sshConfigPath, readFileSync(c.sshConfigPath, 'utf8') + `  GlobalKnownHostsFile ${global}\n  StrictHostKeyChecking yes\n`);
  const ok = await connect({ host: c.alias }, c.options);
  ok.close();
});

test('HostKeyAlias: the key is looked up under the bare alias whatever the port, as OpenSSH does', async () => {
  const s = await server();
  const c = clientFor(s, { trust: false, extraConfig: ['  HostKeyAlias gpu-box.example'] });
  const [type, b64] = s.knownHostsLine.split(' ').slice(1);
  writeFileSync(c.knownHostsPath, `gpu-box.example ${type} ${b64}\n`);
  let prompted = false;
  const opts = {
    ...c.options,
    confirmHostKey: async (): Promise<boolean> => {
      prompted = true;
      return true;
    },
  };
  const ok = await connect({ host: c.alias }, opts);
  ok.close();
  assert.equal(prompted, false, `the alias entry was found although sshd listens on ${s.port}`);
  // Cross-checked against OpenSSH itself with the same config and known_hosts.
  const args = [
    '-F',
    c.sshConfigPath,
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    `UserKnownHostsFile=${c.knownHostsPath}`,
    c.alias,
    'true',
  ];
  execFileSync('ssh', args, { stdio: 'ignore' });
  // The same key under "[alias]:port" is not what ssh looks for: unknown, so asked.
  writeFileSync(c.knownHostsPath, `[gpu-box.example]:${s.port} ${type} ${b64}\n`);
  const again = await connect({ host: c.alias }, opts);
  again.close();
  assert.equal(prompted, true);
  assert.throws(() => execFileSync('ssh', args, { stdio: 'ignore' }));
});

test('ProxyJump through a second sshd', async () => {
  const jump = await server();
  const target = await server();
  const c = clientFor(target, { alias: 'behind', extraConfig: ['  ProxyJump hop'] });
  writeFileSync(
    c.sshConfigPath,
    readFileSync(c.sshConfigPath, 'utf8') +
      `Host hop\n  HostName 127.0.0.1\n  Port ${jump.port}\n  User ${jump.user}\n  IdentityFile ${jump.userKeyPath}\n  IdentitiesOnly yes\n`,
  );
  writeFileSync(c.knownHostsPath, `${target.knownHostsLine}\n${jump.knownHostsLine}\n`);
  const session = await connect({ host: 'behind' }, c.options);
  assert.equal(await session.home(), target.home);
  // The target is reached through the jump host: cutting the jump host's connection ends the session.
  const closed = new Promise<void>((r) => session.onClose(() => r()));
  assert.ok(jump.killConnectionChildren() > 0, 'the jump host has a live connection');
  await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('session survived the jump host drop')), 10_000))]);
  assert.equal(session.closed, true);
});

test("ProxyCommand (OpenSSH's own ssh -W through a second sshd) carries the connection; a failing one says why", async () => {
  const jump = await server();
  const target = await server();
  const jumpKnown = join(mkdtempSync(join(tmpdir(), 'rft-jump-')), 'known_hosts');
  writeFileSync(jumpKnown, `${jump.knownHostsLine}\n`);
  const c = clientFor(target, { alias: 'via-cmd', extraConfig: [`  ProxyCommand ssh -W %h:%p ${opensshArgs(jump, jumpKnown).join(' ')} %r@127.0.0.1`] });
  writeFileSync(
    c.sshConfigPath,
    readFileSync(c.sshConfigPath, 'utf8') +
      `Host broken-proxy\n  HostName 127.0.0.1\n  Port ${target.port}\n  User ${target.user}\n  ProxyCommand sh -c 'echo no route to bastion >&2; exit 3'\n`,
  );
  const session = await connect({ host: 'via-cmd' }, c.options);
  assert.equal(await session.run('echo through-proxy-command'), 'through-proxy-command\n');
  // The bytes really go through the jump host: cutting its connection ends the session.
  const closed = new Promise<void>((r) => session.onClose(() => r()));
  assert.ok(jump.killConnectionChildren() > 0, 'the jump host carries the connection');
  await Promise.race([closed, new Promise((_, rej) => setTimeout(() => rej(new Error('session survived the proxy drop')), 10_000))]);
  await assert.rejects(connect({ host: 'broken-proxy' }, c.options), (e: unknown) => {
    assert.match(String(e), /ProxyCommand exited with 3: no route to bastion/);
    return true;
  });
});

test('keepalive notices a dead (silent) link within 30 s, and SshHost reconnects', { timeout: 60_000 }, async () => {
  const s = await server();
  const c = clientFor(s);
  const host = new SshHost({ host: c.alias }, c.options);
  const session = await host.session();
  const conn = execFileSync('pgrep', ['-P', String(s.pid)], { encoding: 'utf8' })
    .trim()
    .split('\n')
    .map(Number);
  const t0 = Date.now();
  // SIGSTOP the per-connection sshd: the TCP link stays up but nothing answers, like a sleeping laptop's Wi-Fi.
  for (const p of conn) process.kill(p, 'SIGSTOP');
  await new Promise<void>((r) => session.onClose(() => r()));
  const noticedMs = Date.now() - t0;
  for (const p of conn) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  assert.ok(noticedMs < 30_000, `dead link noticed after ${noticedMs} ms`);
  const again = await host.session();
  assert.notEqual(again, session);
  assert.equal(await again.run('echo back'), 'back\n');
  assert.equal(host.connects, 2);
  host.close();
});
