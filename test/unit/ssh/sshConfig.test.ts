import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveHost, listConfiguredHosts, parseHostSpec, chooseSshConfigPath } from '../../../src/core/ssh/sshConfig';
import { expandProxyCommand } from '../../../src/core/ssh/proxyCommand';
import { agentSocketFor } from '../../../src/core/ssh/auth';

const home = mkdtempSync(join(tmpdir(), 'rft-cfg-'));
mkdirSync(join(home, '.ssh', 'conf.d'), { recursive: true });
writeFileSync(join(home, '.ssh', 'conf.d', 'lambda.conf'), 'Host lambda-a100\n  HostName 132.145.138.210\n  User ubuntu\n  ProxyJump bastion\n');
writeFileSync(
  join(home, '.ssh', 'config'),
  [
    'Include conf.d/*.conf',
    'Host bastion',
    '  HostName bastion.example.com',
    '  Port 2200',
    'Host gpu-*',
    '  User trainer',
    '  IdentityFile ~/.ssh/id_gpu',
    '  IdentitiesOnly yes',
    '  ServerAliveInterval 15',
    'Host gpu-1',
    '  HostName 10.1.0.1',
    '  User ignored-because-first-wins',
    'Match host gpu-2',
    '  Port 2022',
    'Host *',
    '  User default-user',
    '',
  ].join('\n'),
);
const source = { home };

test('Host patterns, first value wins, ~ expands, IdentitiesOnly and ServerAliveInterval are read', () => {
  const h = resolveHost('gpu-1', source);
  assert.equal(h.hostName, '10.1.0.1');
  assert.equal(h.user, 'trainer');
  assert.deepEqual(h.identityFiles, [join(home, '.ssh', 'id_gpu')]);
  assert.equal(h.identitiesOnly, true);
  assert.equal(h.serverAliveInterval, 15);
  assert.equal(h.port, 22);
});

test('Match host applies', () => {
  assert.equal(resolveHost('gpu-2', source).port, 2022);
});

test('Include (relative to ~/.ssh, with a glob) and ProxyJump', () => {
  const h = resolveHost('lambda-a100', source);
  assert.equal(h.hostName, '132.145.138.210');
  assert.equal(h.user, 'ubuntu');
  assert.deepEqual(h.proxyJump, ['bastion']);
  assert.equal(resolveHost('bastion', source).port, 2200);
});

test('user@host:port given directly overrides the config', () => {
  const h = resolveHost('alice@gpu-1:2222', source);
  assert.equal(h.user, 'alice');
  assert.equal(h.port, 2222);
  assert.equal(h.hostName, '10.1.0.1');
  assert.equal(resolveHost('unknown.host', source).user, 'default-user');
});

test('listConfiguredHosts lists concrete aliases only', () => {
  assert.deepEqual(listConfiguredHosts(source), ['lambda-a100', 'bastion', 'gpu-1']);
});

test('parseHostSpec never throws and rejects junk', () => {
  assert.deepEqual(parseHostSpec('ubuntu@132.145.138.210:22'), { user: 'ubuntu', host: '132.145.138.210', port: 22 });
  assert.deepEqual(parseHostSpec('[::1]:2222'), { host: '::1', port: 2222 });
  assert.equal(parseHostSpec('a b'), undefined);
  assert.equal(parseHostSpec('host:99999'), undefined);
  assert.equal(parseHostSpec(''), undefined);
});

test('ProxyCommand is read (none disables it, ProxyJump wins) and its tokens expand with shell-safe values', () => {
  const h = mkdtempSync(join(tmpdir(), 'rft-cfg-pc-'));
  mkdirSync(join(h, '.ssh'));
  writeFileSync(
    join(h, '.ssh', 'config'),
    [
      'Host ssm-*',
      '  ProxyCommand aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters portNumber=%p',
      'Host both',
      '  ProxyJump bastion',
      '  ProxyCommand nc %h %p',
      'Host off',
      '  ProxyCommand none',
      '',
    ].join('\n'),
  );
  const r = resolveHost('ssm-i-0abc', { home: h });
  assert.equal(r.proxyCommand, 'aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters portNumber=%p');
  assert.equal(
    expandProxyCommand(r.proxyCommand!, { host: r.hostName, port: r.port, user: 'ubuntu', alias: r.alias }),
    'aws ssm start-session --target ssm-i-0abc --document-name AWS-StartSSHSession --parameters portNumber=22',
  );
  assert.equal(resolveHost('both', { home: h }).proxyCommand, undefined);
  assert.deepEqual(resolveHost('both', { home: h }).proxyJump, ['bastion']);
  assert.equal(resolveHost('off', { home: h }).proxyCommand, undefined);
  // A hostile host name stays one argument; %% is a literal percent.
  assert.throws(() => expandProxyCommand('nc %h %p # 100%%', { host: 'x;touch /tmp/pwned', port: 2222, user: 'u', alias: 'a' }), /host name contains ";"/);
  assert.equal(expandProxyCommand('nc %h %p # 100%%', { host: 'gpu-1.example.com', port: 2222, user: 'u', alias: 'a' }), 'nc gpu-1.example.com 2222 # 100%');
});

test("which ssh_config is read: our setting, else Remote-SSH's remote.SSH.configFile, else ~/.ssh/config", () => {
  assert.equal(chooseSshConfigPath('~/gpu/ssh_config', '/etc/other', '/home/u'), '/home/u/gpu/ssh_config');
  assert.equal(chooseSshConfigPath('  ', '~/.ssh/remote_config', '/home/u'), '/home/u/.ssh/remote_config');
  assert.equal(chooseSshConfigPath(undefined, undefined, '/home/u'), undefined);
  assert.equal(chooseSshConfigPath('', ' ', '/home/u'), undefined);
  assert.equal(chooseSshConfigPath('~user/config', undefined, '/home/u'), '~user/config', 'only a bare ~ is the home');
});

test('Match exec never runs its command and its block never applies', () => {
  const h = mkdtempSync(join(tmpdir(), 'rft-cfg-exec-'));
  mkdirSync(join(h, '.ssh'));
  const marker = join(h, 'ran');
  writeFileSync(
    join(h, '.ssh', 'config'),
    [
      `Match exec "touch ${marker}"`,
      '  User from-exec',
      `Match host gpu exec "touch ${marker}"`,
      '  Port 2999',
      `Match !exec "touch ${marker}"`,
      '  IdentityFile ~/.ssh/from-negated-exec',
      '',
    ].join('\n'),
  );
  const r = resolveHost('gpu', { home: h, defaultUser: 'me' });
  assert.equal(existsSync(marker), false, 'no command from the config was run');
  assert.equal(r.user, 'me');
  assert.equal(r.port, 22);
  assert.deepEqual(r.identityFiles, []);
});

test('agentSocketFor: explicit choice, then IdentityAgent (none, SSH_AUTH_SOCK, $VAR, a path), then SSH_AUTH_SOCK', () => {
  const env = { SSH_AUTH_SOCK: '/env.sock', OP_SOCK: '/op.sock' };
  assert.equal(agentSocketFor('/explicit.sock', '/config.sock', env), '/explicit.sock');
  assert.equal(agentSocketFor(null, '/config.sock', env), undefined);
  assert.equal(agentSocketFor(undefined, '/config.sock', env), '/config.sock');
  assert.equal(agentSocketFor(undefined, 'none', env), undefined);
  assert.equal(agentSocketFor(undefined, 'SSH_AUTH_SOCK', env), '/env.sock');
  assert.equal(agentSocketFor(undefined, '$OP_SOCK', env), '/op.sock');
  assert.equal(agentSocketFor(undefined, '$UNSET_SOCK', env), undefined);
  assert.equal(agentSocketFor(undefined, undefined, env), '/env.sock');
  assert.equal(agentSocketFor(undefined, undefined, {}), undefined);
});
