// ProxyCommand templates as people copy them, run by a real /bin/sh, with host and user names that carry
// commands. AWS's SSM template puts %h inside sh -c "…" (where a quoted $(…) still runs); Cloudflare's passes
// %h as an argument. The attack is shown first against the quoting the extension used to do; then the
// extension's expansion must refuse such names before any shell sees them (OpenSSH 9.6's valid_hostname /
// valid_ruser), and leave ordinary names, instance ids and addresses working.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expandProxyCommand, proxyTokenProblem } from '../../../src/core/ssh/proxyCommand';
import { shellQuote } from '../../../src/core/ssh/quote';

const SSM = `sh -c "echo aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters 'portNumber=%p'"`;
const CLOUDFLARE = 'echo cloudflared access ssh --hostname %h --user %r';
const dir = mkdtempSync(join(tmpdir(), 'rft-proxyinj-'));

function hostile(tag: string): { host: string; user: string; marker: string } {
  const marker = join(dir, `pwned-${tag}`);
  return { host: `i-$(touch ${marker})x`, user: `u$(touch ${marker}-user)`, marker };
}

function runSh(command: string): void {
  spawnSync('/bin/sh', ['-c', `exec ${command}`], { stdio: 'ignore', timeout: 10_000 });
}

test('ProxyCommand: the old quoting let a host name run a command inside the SSM template (the attack)', () => {
  const h = hostile('old');
  const old = SSM.replace(/%h/g, shellQuote(h.host)).replace(/%p/g, '22');
  runSh(old);
  assert.ok(existsSync(h.marker), 'a quoted $(…) inside sh -c "…" runs');
});

for (const [name, template] of [
  ['SSM', SSM],
  ['Cloudflare', CLOUDFLARE],
] as const) {
  test(`ProxyCommand (${name} template): a host or user name with shell syntax is refused before any shell runs`, () => {
    const h = hostile(name);
    assert.throws(() => expandProxyCommand(template, { host: h.host, port: 22, user: 'ubuntu', alias: 'x' }), /host name contains "\$"/);
    if (template.includes('%r'))
      assert.throws(() => expandProxyCommand(template, { host: 'i-0abc', port: 22, user: h.user, alias: 'x' }), /user name contains "\("/);
    assert.equal(existsSync(h.marker) || existsSync(`${h.marker}-user`), false);
    // Ordinary names still work, inside the template's own quotes, as with ssh.
    const out = spawnSync('/bin/sh', ['-c', `exec ${expandProxyCommand(template, { host: 'i-0123456789abcdef0', port: 2222, user: 'ubuntu', alias: 'x' })}`], {
      encoding: 'utf8',
    }).stdout;
    assert.match(out, /i-0123456789abcdef0/);
    if (template === SSM) assert.match(out, /portNumber=2222/);
  });
}

test("proxyTokenProblem: OpenSSH's character rules, and cmd.exe's on Windows", () => {
  for (const ok of ['gpu-1.example.com', '10.0.0.5', 'fe80::1%eth0', 'i-0abc', 'ssm-host_1'])
    assert.equal(proxyTokenProblem('host', ok, 'linux'), undefined, ok);
  for (const bad of ['a;b', 'a b', '-oProxyCommand=x', 'a`b`', "a'b", 'a"b', 'a$b', 'a\\b', 'a|b', 'a&b', 'a<b', 'a(b', 'a{b', 'a,b', 'a\nb'])
    assert.ok(proxyTokenProblem('host', bad, 'linux'), bad);
  assert.equal(proxyTokenProblem('user', 'first last', 'linux'), undefined, 'a space alone is allowed in a user name, as in OpenSSH');
  assert.ok(proxyTokenProblem('user', 'a -x', 'linux'));
  assert.ok(proxyTokenProblem('user', 'a\\', 'linux'));
  assert.equal(proxyTokenProblem('host', 'fe80::1%eth0', 'win32') !== undefined, true, 'cmd.exe expands %');
  assert.ok(proxyTokenProblem('host', 'a^b', 'win32'));
  assert.ok(proxyTokenProblem('host', 'a!b', 'win32'));
});
