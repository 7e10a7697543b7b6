// Differential test: resolveHost() against OpenSSH itself. For every (config, destination) of a corpus of
// hand-written configs in the styles people really write, `ssh -G` prints what OpenSSH resolves (without
// connecting), `ssh -v` with a ProxyCommand that exits at once prints the identity files it would offer
// (-G prints those unexpanded), and each field resolveHost() returns must say the same.
//
// Deliberate differences, normalised below rather than "fixed":
// - `~` and %d: OpenSSH takes them from the passwd entry (getpwuid), except in Include, which glob(3) expands
//   with $HOME. ssh runs here with HOME set to a temp dir, so Includes land in our fixtures, and our side is
//   given that same dir as its home; paths in OpenSSH's answers are compared with the passwd home put back.
// - With no IdentityFile configured OpenSSH lists its defaults (~/.ssh/id_rsa, id_ecdsa, …); we return none
//   and session.ts falls back to defaultIdentityFiles().
// - ProxyCommand: OpenSSH keeps the rest of the line verbatim; the ssh-config parser gives it back as words
//   (runs of blanks collapsed, a trailing `# comment` dropped). Both run the same under /bin/sh, so they are
//   compared with blanks collapsed and trailing comments removed.
// - StrictHostKeyChecking: -G prints true/false for yes/no (and its default, ask, when unset).
// - ProxyJump: -G rebuilds the last hop (brackets round numeric hosts, ssh:// unwrapped); hops are compared
//   as parsed [user@]host[:port].
// Left out of the corpus on purpose: `Match exec` (we never run commands from a config; such a block never
// applies), CanonicalizeHostname (DNS lookups), `~otheruser/` paths, and file names whose order depends on
// LC_COLLATE (ssh runs with LC_ALL=C here, where glob(3) sorts bytewise as we do).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join } from 'node:path';
import { resolveHost, parseHostSpec } from '../../../src/core/ssh/sshConfig';
import { OPENSSH_DEFAULT_CIPHERS } from '../../../src/core/ssh/sshCiphers';
import type { ResolvedHost } from '../../../src/core/ssh/sshConfig';

const sshVersion = spawnSync('ssh', ['-V'], { encoding: 'utf8' });
const noSsh =
  sshVersion.error || sshVersion.status !== 0 ? `OpenSSH client not available (${sshVersion.error?.message ?? sshVersion.stderr.trim()})` : undefined;

const home = mkdtempSync(join(tmpdir(), 'rft-vs-openssh-'));
const pwHome = userInfo().homedir;
const localUser = userInfo().username;
const keyDir = mkdtempSync(join(tmpdir(), 'rft-vs-openssh-keys-'));
// ${RFT_KEYDIR} in an IdentityFile: the same value for ssh (its env below) and for us (this process).
process.env.RFT_KEYDIR = keyDir;
const sshEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LC_ALL: 'C', RFT_KEYDIR: keyDir };

/** Writes a file under the temp home, readable only by its owner's group as OpenSSH insists for Includes. */
function put(rel: string, text: string): string {
  const p = join(home, rel);
  mkdirSync(dirname(p), { recursive: true });
  writeFileSync(p, text);
  chmodSync(p, 0o644);
  return p;
}

interface Corpus {
  readonly name: string;
  readonly config: string;
  readonly queries: readonly string[];
}

const corpus: Corpus[] = [];
function add(name: string, lines: readonly string[], queries: readonly string[], eol = '\n'): void {
  put(join('.ssh', `${name}.config`), lines.join(eol) + eol);
  corpus.push({ name, config: join(home, '.ssh', `${name}.config`), queries });
}

add(
  'everyday',
  [
    '# Someone with a few GPU boxes',
    '',
    'Host gpu-box lab-gpu',
    '    HostName 203.0.113.10',
    '    User trainer',
    '    Port 2222',
    '    IdentityFile ~/.ssh/id_gpu',
    '    IdentitiesOnly yes',
    '',
    'Host lab-*',
    '    User labuser',
    '    Port 2200',
    '    IdentityFile ~/.ssh/id_lab',
    '',
    'Host *.compute.example.com !bad.compute.example.com',
    '    User ubuntu',
    '    StrictHostKeyChecking accept-new',
    '',
    '# ? is exactly one character',
    'Host node?',
    '    User nodeuser',
    '',
    '# commas are not separators on a Host line',
    'Host a,b',
    '    User comma-is-literal',
    '',
    'Host Mixed',
    '    HostName MiXeD.Example.COM',
    '    HostKeyAlias MixedAlias',
    '',
    '# defaults last: they only fill what nothing above set',
    'Host *',
    '    User fallback',
    '    ServerAliveInterval 60',
    '    ServerAliveCountMax 5',
    '    IdentityFile ~/.ssh/id_default',
  ],
  [
    'gpu-box',
    'lab-gpu',
    'lab-07',
    'x.compute.example.com',
    'bad.compute.example.com',
    'node1',
    'node',
    'node12',
    'a',
    'Mixed',
    'mixed',
    'unknown-host',
    '10.0.0.9',
    'alice@lab-07:2022',
    'root@[2001:DB8::5]:2201',
  ],
);

add(
  'defaults-first',
  [
    'Host *',
    '  User everyone',
    '  IdentityFile ~/.ssh/id_everyone',
    '  ServerAliveInterval 30',
    '  UserKnownHostsFile ~/.ssh/known_hosts_all',
    '',
    'Host special',
    '  User ignored-because-host-star-came-first',
    '  IdentityFile ~/.ssh/id_special',
    '  IdentityFile ~/.ssh/id_everyone',
    '  ServerAliveInterval 5',
    '  HostName special.example.org',
  ],
  ['special', 'other'],
);

add(
  'match',
  [
    'Host db',
    '  HostName db.internal.example.com',
    'Host web',
    '  HostName %h.corp.example.com',
    'Host build',
    '  User ci',
    'Host deploy-*',
    '  User deploy',
    '',
    'Match host *.internal.example.com',
    '  User dbadmin',
    '  Port 5022',
    'Match originalhost web',
    '  IdentityFile ~/.ssh/id_web',
    'Match host *.corp.example.com !host web.corp.example.com',
    '  ServerAliveInterval 10',
    'Match host *.CORP.example.com',
    '  ServerAliveInterval 20',
    'Match user ci',
    '  Port 2202',
    'Match !user ci,deploy originalhost build*,deploy-*',
    '  IdentityFile ~/.ssh/id_not_ci',
    'Match user deploy',
    '  IdentityFile ~/.ssh/id_deploy',
    'Match user alice',
    '  IdentityFile ~/.ssh/id_alice',
    `Match localuser ${localUser}`,
    '  HostKeyAlias local-user-matched',
    'Match all',
    '  UserKnownHostsFile ~/.ssh/known_hosts_all',
  ],
  ['db', 'web', 'api.corp.example.com', 'build', 'bob@build', 'deploy-1', 'other', 'alice@other', 'DB'],
);

add(
  'final',
  [
    'Host short',
    '  HostName Short.Example.NET',
    'Match final host short.example.net',
    '  User final-user',
    'Match canonical host *.example.net',
    '  Port 2244',
    'Match host short.example.net',
    '  IdentityFile ~/.ssh/id_first_pass',
  ],
  ['short', 'other.example.net', 'elsewhere'],
);

// Include: relative (to ~/.ssh), globs in the file name and in a directory, a dotfile the glob must skip,
// quoted paths with a space, absolute paths, nesting, and Includes inside Host blocks (which only apply
// with their block, and after which the block goes on).
put('.ssh/conf.d/10-lab.conf', 'Host lab-a100\n  HostName 10.20.0.5\n  User ubuntu\n  ProxyJump jump\n  Include nested/*.conf\n');
put('.ssh/conf.d/20-cloud.conf', 'Host cloud-* lab-a100\n  User second-file-loses\n  ServerAliveInterval 25\n');
put('.ssh/conf.d/.hidden.conf', 'Host lab-a100\n  Port 9999\n');
put('.ssh/conf.d/notes.txt', 'Host lab-a100\n  Port 9998\n');
put('.ssh/conf.d/Z-upper.conf', 'Host cloud-z\n  Port 2026\n');
put('.ssh/conf.d/a-lower.conf', 'Host cloud-z\n  Port 2027\n');
put('.ssh/nested/a.conf', 'IdentityFile ~/.ssh/id_lab_nested\nHost nested-only\n  User nested\n');
put('.ssh/inside-jump.conf', 'Port 2022\nHost jump-sub\n  User sub\n');
put('.ssh/projects/alpha/ssh_config', 'Host alpha-box\n  HostName alpha.example.org\n  User alpha\n');
put('.ssh/projects/beta/ssh_config', 'Host beta-box\n  HostName beta.example.org\n');
put('.ssh/my includes/personal.conf', 'Host personal\n  HostName personal.example.net\n  User me\n');
const absInclude = put('elsewhere/abs-include.conf', 'Host abs-host\n  HostName abs.example.com\n');
put('.ssh/tail.conf', 'Host *\n  User tail-default\n  ServerAliveCountMax 7\n');
add(
  'include',
  [
    'Include conf.d/*.conf',
    'Include projects/*/ssh_config',
    `Include "my includes/*.conf" ${absInclude}`,
    '',
    'Host jump',
    '  HostName jump.example.com',
    '  Include inside-jump.conf',
    '  IdentityFile ~/.ssh/id_jump',
    '',
    'Host lab-a100',
    '  Port 2300',
    '',
    'Match all',
    'Include ~/.ssh/tail.conf',
  ],
  ['lab-a100', 'cloud-1', 'cloud-z', 'nested-only', 'jump', 'jump-sub', 'alpha-box', 'beta-box', 'personal', 'abs-host', 'nobody'],
);

add(
  'proxy',
  [
    'Host bastion',
    '  HostName bastion.example.com',
    '  User ops',
    '  ProxyCommand none',
    '',
    'Host inner-*',
    '  ProxyJump bastion',
    '',
    'Host chain',
    '  ProxyJump hop1,admin@hop2:2222',
    '',
    'Host via-uri',
    '  ProxyJump ssh://ops@jump.example.com:2200',
    '',
    'Host via-uri-chain',
    '  ProxyJump ssh://first@hop1:2201,ssh://hop2/',
    '',
    'Host via-uri6',
    '  ProxyJump ops@[2001:db8::1]:2200',
    '',
    'Host via-ip',
    '  ProxyJump 10.1.1.1',
    '',
    'Host direct',
    '  ProxyJump none',
    '  ProxyJump ignored-after-none',
    '',
    // ProxyJump none no longer shuts out a later ProxyCommand: OpenSSH 10.3, backported to Debian's 9.2p1.
    'Host none-then-command',
    '  ProxyJump none',
    '  ProxyCommand nc %h %p',
    '',
    'Host jump-then-command',
    '  ProxyJump bastion',
    '  ProxyCommand nc %h %p',
    '',
    'Host cmd-first',
    '  ProxyCommand ssh -W %h:%p bastion',
    '  ProxyJump bastion',
    '',
    'Host ssm-*',
    '  ProxyCommand sh -c "aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters \'portNumber=%p\'"',
    '',
    'Host cf-*',
    '  ProxyCommand=cloudflared access ssh --hostname %h   # Cloudflare tunnel',
    '',
    'Host *',
    '  ProxyJump bastion',
  ],
  [
    'bastion',
    'inner-1',
    'chain',
    'via-uri',
    'via-uri-chain',
    'via-uri6',
    'via-ip',
    'direct',
    'none-then-command',
    'jump-then-command',
    'cmd-first',
    'ssm-i-0abc',
    'cf-box',
    'elsewhere',
  ],
);

const syntax = [
  '# a comment at the top, then a blank line',
  '',
  'HOST=syntax-a',
  '\tHOSTNAME\tsyntax-a.example.com',
  '\tport = 2201',
  '  USER="deploy"',
  '  identityfile="~/.ssh/key with spaces"',
  '  UserKnownHostsFile ~/.ssh/kh1 "~/.ssh/known hosts 2" %d/.ssh/kh_%h_%p',
  '  ServerAliveInterval 1m30s',
  '  serveralivecountmax 0',
  '  StrictHostKeyChecking no',
  '  GlobalKnownHostsFile ~/.ssh/global_kh /etc/ssh/other_kh',
  '  IdentitiesOnly true',
  '  HostKeyAlias Syntax-Alias',
  '',
  'Host syntax-b # a trailing comment',
  '  Port 2202 # and one after a value',
  '  StrictHostKeyChecking yes',
  '  ServerAliveInterval 2h',
  '  UserKnownHostsFile none',
  '  GlobalKnownHostsFile none',
  '',
  'Host syntax-c',
  '  StrictHostKeyChecking off',
  '  IdentitiesOnly no',
];
add('syntax', syntax, ['syntax-a', 'syntax-b', 'syntax-c']);
add('syntax-crlf', syntax, ['syntax-a', 'syntax-b', 'syntax-c'], '\r\n');

add(
  'tokens',
  [
    'Host tok-*',
    '  HostName %h.example.com',
    '  User tokuser',
    '  Port 2200',
    '  IdentityFile ~/.ssh/%r@%h',
    '  IdentityFile ~/.ssh/%u-%n-%p',
    '  IdentityFile %d/.ssh/%l-%L-%i',
    '  IdentityFile ~/.ssh/%C',
    '  IdentityFile ~/.ssh/%k',
    '  IdentityFile ~/.ssh/100%%',
    '  IdentityFile ${RFT_KEYDIR}/env_key',
    '  IdentityFile ~/.ssh/%r@%h',
    '  UserKnownHostsFile ~/.ssh/known_hosts_%k %d/kh/%h-%p',
    '',
    'Host tok-alias',
    '  HostKeyAlias Tok-KeyAlias',
  ],
  ['tok-one', 'tok-alias', 'bob@tok-two:2022', 'Tok-Case'],
);

add(
  'agents',
  [
    '# Agents other than SSH_AUTH_SOCK: 1Password, Secretive, a per-host socket',
    'Host op-*',
    '  IdentityAgent ~/.1password/agent.sock',
    'Host no-agent',
    '  IdentityAgent none',
    'Host env-agent',
    '  IdentityAgent SSH_AUTH_SOCK',
    'Host var-agent',
    '  IdentityAgent $RFT_AGENT_SOCK',
    'Host tok-agent',
    '  IdentityAgent "~/agents/%r at %h.sock"',
    'Host *',
    '  User agentuser',
  ],
  ['op-a100', 'no-agent', 'env-agent', 'var-agent', 'tok-agent', 'plain'],
);

/** `ssh` arguments for a destination: user@host:port is our API's form of ssh's -l user -p port host. */
function destinationArgs(query: string): string[] {
  const spec = parseHostSpec(query);
  if (!spec) return [query];
  return [...(spec.user ? ['-l', spec.user] : []), ...(spec.port ? ['-p', String(spec.port)] : []), spec.host];
}

function ssh(args: readonly string[]): { stdout: string; stderr: string; status: number | null } {
  const r = spawnSync('ssh', args, { encoding: 'utf8', env: sshEnv, stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
  return { stdout: r.stdout, stderr: r.stderr, status: r.status };
}

interface OpensshConfig {
  /** `ssh -G` as keyword → value (the first line of each keyword). */
  readonly options: Map<string, string>;
  /** UserKnownHostsFile as a list: -G joins it with blanks, so the -vvv log of each expansion splits it. */
  readonly knownHostsFiles: string[];
}

function opensshConfig(config: string, query: string): OpensshConfig {
  const r = ssh(['-G', '-vvv', '-F', config, ...destinationArgs(query)]);
  assert.equal(r.status, 0, `ssh -G failed: ${r.stderr}`);
  const options = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const i = line.indexOf(' ');
    if (i > 0 && !options.has(line.slice(0, i))) options.set(line.slice(0, i), line.slice(i + 1));
  }
  const expanded = [...r.stderr.matchAll(/^debug3: expanded UserKnownHostsFile '.*' -> '(.*)'$/gm)].map((m) => m[1]!);
  return { options, knownHostsFiles: splitKnownHosts(options.get('userknownhostsfile') ?? 'none', expanded) };
}

/** Splits -G's blank-joined file list, taking a logged expansion (which may hold blanks) whole where it fits. */
function splitKnownHosts(line: string, expanded: readonly string[]): string[] {
  if (line === 'none') return [];
  const files: string[] = [];
  for (let rest = line; rest !== '';) {
    const whole = expanded.find((e) => rest === e || rest.startsWith(`${e} `));
    const next = whole ?? rest.split(' ')[0]!;
    files.push(next);
    rest = rest.slice(next.length + 1);
  }
  return files;
}

/**
 * The identity files ssh would offer, expanded. ssh is run with a ProxyCommand that exits at once: it loads
 * (and logs) its identities, then fails reading the server's banner, with no network touched.
 */
function opensshIdentities(config: string, query: string): string[] {
  const r = ssh(['-v', '-F', config, '-o', 'BatchMode=yes', '-o', 'ProxyCommand=false', ...destinationArgs(query)]);
  const files: string[] = [];
  for (const m of r.stderr.matchAll(/^debug1: identity file (.*) type -?\d+$/gm)) {
    if (files.length > 0 && m[1] === `${files[files.length - 1]}-cert`) continue;
    files.push(m[1]!);
  }
  assert.ok(files.length > 0, `no identity files in ssh -v output:\n${r.stderr}`);
  return files;
}

const OPENSSH_DEFAULT_IDENTITIES = ['id_rsa', 'id_ecdsa', 'id_ecdsa_sk', 'id_ed25519', 'id_ed25519_sk', 'id_xmss', 'id_dsa'];

/**
 * A ProxyJump list as comparable [user@]host[:port] triples. -G brackets numeric hosts and unwraps an ssh://
 * last hop (earlier hops it prints as written); ours must already be plain [user@]host[:port], which is
 * what session.ts hands back to resolveHost() for each hop.
 */
function hops(list: string | undefined, unwrapUris: boolean): string[] | undefined {
  if (list === undefined) return undefined;
  return list.split(',').map((hop) => {
    const s = parseHostSpec(unwrapUris ? hop.replace(/^ssh:\/\/([^/]+)\/?$/, '$1') : hop);
    return s ? `${s.user ?? ''}@${s.host}:${s.port ?? ''}` : `unparsed:${hop}`;
  });
}

function command(c: string | undefined): string | undefined {
  return c
    ?.replace(/(^|\s)#.*$/, '')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Our answer in -G's terms, paths with OpenSSH's home for ~ and %d. */
function ours(r: ResolvedHost): Record<string, unknown> {
  const withPwHome = (p: string): string => p.split(home).join(pwHome);
  const strict = r.strictHostKeyChecking ?? 'ask';
  return {
    hostname: r.hostName,
    port: String(r.port),
    user: r.user,
    identitiesonly: r.identitiesOnly ? 'yes' : 'no',
    serveraliveinterval: String(r.serverAliveInterval),
    serveralivecountmax: String(r.serverAliveCountMax),
    userknownhostsfile: r.userKnownHostsFiles.map(withPwHome),
    globalknownhostsfile: r.globalKnownHostsFiles.length ? r.globalKnownHostsFiles.map(withPwHome).join(' ') : 'none',
    hostkeyalias: r.hostKeyAlias,
    stricthostkeychecking: strict === 'yes' ? 'true' : strict === 'no' ? 'false' : strict,
    proxyjump: r.proxyJump.length > 0 ? hops(r.proxyJump.join(','), false) : undefined,
    proxycommand: command(r.proxyCommand),
    identityfile: r.identityFiles.map(withPwHome),
    identityagent: r.identityAgent === undefined ? undefined : withPwHome(r.identityAgent),
    ciphers: (r.ciphers ?? OPENSSH_DEFAULT_CIPHERS).join(','),
  };
}

function theirs(o: OpensshConfig, identities: string[]): Record<string, unknown> {
  const g = o.options;
  const defaults = OPENSSH_DEFAULT_IDENTITIES.map((n) => join(pwHome, '.ssh', n));
  return {
    hostname: g.get('hostname'),
    port: g.get('port'),
    user: g.get('user'),
    identitiesonly: g.get('identitiesonly'),
    serveraliveinterval: g.get('serveraliveinterval'),
    serveralivecountmax: g.get('serveralivecountmax'),
    userknownhostsfile: o.knownHostsFiles,
    // -G prints GlobalKnownHostsFile unexpanded; ssh expands a leading ~ when it reads the files.
    globalknownhostsfile: g
      .get('globalknownhostsfile')
      ?.split(' ')
      .map((f) => (f.startsWith('~/') ? join(pwHome, f.slice(2)) : f))
      .join(' '),
    hostkeyalias: g.get('hostkeyalias'),
    stricthostkeychecking: g.get('stricthostkeychecking'),
    proxyjump: hops(g.get('proxyjump'), true),
    proxycommand: command(g.get('proxycommand')),
    // OpenSSH's built-in defaults when nothing is configured; we leave those to session.ts.
    identityfile: identities.join('\n') === defaults.join('\n') ? [] : identities,
    identityagent: g.get('identityagent'),
    ciphers: g.get('ciphers'),
  };
}

// Ciphers: a benchmark pins one cipher for us and for ssh(1) this way; people restrict them for compliance.
add(
  'ciphers',
  [
    'Host only-gcm',
    '    Ciphers aes128-gcm@openssh.com',
    'Host two',
    '    Ciphers aes256-ctr,chacha20-poly1305@openssh.com',
    'Host plus',
    '    Ciphers +aes128-cbc',
    'Host minus',
    '    Ciphers -chacha20-poly1305@openssh.com,aes192*',
    'Host caret',
    '    Ciphers ^aes256-gcm@openssh.com',
    'Host minus-neg',
    '    Ciphers -aes*,!aes256-gcm@openssh.com',
    'Host first-wins',
    '    Ciphers aes128-ctr',
    'Host *',
    '    Ciphers aes256-ctr',
  ],
  ['only-gcm', 'two', 'plus', 'minus', 'caret', 'minus-neg', 'first-wins', 'other'],
);

for (const c of corpus) {
  for (const q of c.queries) {
    test(`${c.name}: ${q} resolves as ssh -G does`, (t) => {
      if (noSsh) {
        t.skip(noSsh);
        return;
      }
      const expected = theirs(opensshConfig(c.config, q), opensshIdentities(c.config, q));
      assert.deepEqual(ours(resolveHost(q, { path: c.config, home })), expected);
    });
  }
}

test('the corpus covers what it claims (guards against an oracle that silently agrees on defaults)', (t) => {
  if (noSsh) {
    t.skip(noSsh);
    return;
  }
  const g = (name: string, q: string): Map<string, string> => opensshConfig(corpus.find((c) => c.name === name)!.config, q).options;
  assert.equal(g('include', 'lab-a100').get('port'), '2300');
  assert.equal(g('include', 'jump').get('port'), '2022');
  assert.equal(g('include', 'nested-only').get('user'), 'tail-default');
  assert.equal(g('proxy', 'bastion').get('proxyjump'), undefined);
  assert.equal(g('proxy', 'cmd-first').get('proxyjump'), undefined);
  assert.equal(g('match', 'web').get('serveraliveinterval'), '20');
  assert.equal(g('final', 'short').get('user'), 'final-user');
  assert.equal(g('everyday', 'node').get('user'), 'fallback');
  assert.equal(g('ciphers', 'only-gcm').get('ciphers'), 'aes128-gcm@openssh.com');
  assert.equal(g('ciphers', 'plus').get('ciphers'), `${OPENSSH_DEFAULT_CIPHERS.join(',')},aes128-cbc`);
  const syntaxA = opensshConfig(corpus.find((c) => c.name === 'syntax')!.config, 'syntax-a').knownHostsFiles;
  assert.deepEqual(
    syntaxA.map((f) => f.slice(f.lastIndexOf('/') + 1)),
    ['kh1', 'known hosts 2', 'kh_syntax-a.example.com_2201'],
  );
});
