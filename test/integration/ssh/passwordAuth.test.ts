// Password and keyboard-interactive (PAM) login against a real sshd, for hosts that take no key (a lab box, a
// university cluster). A throwaway local account with a random password is made for the test and removed
// after; that needs root, so elsewhere the tests skip and say why.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { connect, SshFatalError } from '../../../src/core/ssh/session';
import type { SecretPrompt } from '../../../src/core/ssh/auth';

const USER = 'rftpwtest';
const PASSWORD = `Pw-${randomBytes(9).toString('base64url')}`;
const isRoot = process.getuid?.() === 0;
const hasUseradd = spawnSync('sh', ['-c', 'command -v useradd && command -v chpasswd && command -v userdel']).status === 0;
const why = !isRoot ? 'needs root to make a throwaway account with a password' : !hasUseradd ? 'useradd/chpasswd/userdel are not installed' : undefined;
const servers: Sshd[] = [];

before(() => {
  if (why) return;
  spawnSync('userdel', [USER]);
  execFileSync('useradd', ['-M', '-s', '/bin/sh', USER]);
  execFileSync('chpasswd', [], { input: `${USER}:${PASSWORD}\n` });
});
after(async () => {
  for (const s of servers) await s.stop();
  if (!why) spawnSync('userdel', [USER]);
});

async function server(extra: readonly string[]): Promise<Sshd> {
  const s = await startSshd({ extraConfig: extra });
  servers.push(s);
  return s;
}

test('password: asked once, a wrong answer asked again, then remembered in memory for the next connection', async (t) => {
  if (why) return t.skip(why);
  const s = await server(['PasswordAuthentication yes', 'PubkeyAuthentication no']);
  const c = clientFor(s, { alias: 'pw-host' });
  const prompts: SecretPrompt[] = [];
  const answers = ['wrong-password', PASSWORD];
  const passwordCache = new Map<string, string>();
  const opts = {
    ...c.options,
    passwordCache,
    askSecret: async (p: SecretPrompt): Promise<string | undefined> => {
      prompts.push(p);
      return answers.shift();
    },
  };
  const session = await connect({ host: c.alias, user: USER }, opts);
  assert.equal((await session.run('id -un')).trim(), USER);
  session.close();
  assert.equal(prompts.length, 2);
  assert.deepEqual({ ...prompts[0]! }, { kind: 'password', user: USER, host: '127.0.0.1', port: s.port, prompt: 'Password', echo: false });
  assert.deepEqual([...passwordCache.values()], [PASSWORD], 'only the password that worked is kept');
  const again = await connect({ host: c.alias, user: USER }, opts);
  again.close();
  assert.equal(prompts.length, 2, 'a reconnect is not asked again');
});

test("keyboard-interactive through PAM: the server's own prompt is shown, without echo", async (t) => {
  if (why) return t.skip(why);
  const s = await server(['UsePAM yes', 'KbdInteractiveAuthentication yes', 'PasswordAuthentication no', 'PubkeyAuthentication no']);
  const c = clientFor(s, { alias: 'kbd-host' });
  const prompts: SecretPrompt[] = [];
  const session = await connect(
    { host: c.alias, user: USER },
    {
      ...c.options,
      passwordCache: new Map(),
      askSecret: async (p) => {
        prompts.push(p);
        return PASSWORD;
      },
    },
  );
  assert.equal((await session.run('id -un')).trim(), USER);
  session.close();
  assert.equal(prompts.length, 1);
  assert.equal(prompts[0]!.kind, 'keyboard-interactive');
  assert.match(prompts[0]!.prompt, /Password/);
  assert.equal(prompts[0]!.echo, false);
});

test('a server that takes only keys never asks for a password; a cancelled prompt fails cleanly', async (t) => {
  if (why) return t.skip(why);
  const keysOnly = await server([]);
  const c = clientFor(keysOnly, { alias: 'keys-only' });
  let asked = 0;
  await assert.rejects(
    connect(
      { host: c.alias, user: USER },
      {
        ...c.options,
        askSecret: async () => {
          asked++;
          return PASSWORD;
        },
      },
    ),
    (e: unknown) => e instanceof SshFatalError && e.code === 'auth-failed',
  );
  assert.equal(asked, 0, 'no password prompt for a server that does not offer passwords');
  const pw = await server(['PasswordAuthentication yes', 'PubkeyAuthentication no']);
  const p = clientFor(pw, { alias: 'pw-cancel' });
  await assert.rejects(
    connect(
      { host: p.alias, user: USER },
      {
        ...p.options,
        passwordCache: new Map(),
        askSecret: async () => {
          asked++;
          return undefined;
        },
      },
    ),
    (e: unknown) => e instanceof SshFatalError && e.code === 'auth-failed' && /password/.test(e.message),
  );
  assert.equal(asked, 1, 'cancelled once: not asked again');
});

test('two factors (AuthenticationMethods password,keyboard-interactive): the second is asked after the first succeeds', async (t) => {
  if (why) return t.skip(why);
  const s = await server([
    'UsePAM yes',
    'PasswordAuthentication yes',
    'KbdInteractiveAuthentication yes',
    'PubkeyAuthentication no',
    'AuthenticationMethods password,keyboard-interactive',
  ]);
  const c = clientFor(s, { alias: 'two-factor' });
  const kinds: string[] = [];
  const session = await connect(
    { host: c.alias, user: USER },
    {
      ...c.options,
      passwordCache: new Map(),
      askSecret: async (p) => {
        kinds.push(p.kind);
        return PASSWORD;
      },
    },
  );
  assert.equal((await session.run('id -un')).trim(), USER);
  session.close();
  assert.deepEqual(kinds, ['password', 'keyboard-interactive']);
});
