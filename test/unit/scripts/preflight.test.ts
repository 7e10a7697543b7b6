// The preflight decides from facts (what is missing, the package manager, root or not) and then acts. The
// decision is checked as a pure function for apt, dnf, brew and none; the program is then run for real on a
// PATH that holds only `node` (and a recording apt-get), once as an unprivileged user (it must print the one
// command and exit 2 without a stack trace, installing nothing) and once as root (it must call apt-get
// install with the missing packages, and say clearly when that fails).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { REQUIREMENTS, decide, detectManager, isMet } from '../../../scripts/preflight.mjs';

const SCRIPT = resolve(__dirname, '../../../scripts/preflight.mjs');
const byId = (id: string) => REQUIREMENTS.find((r) => r.id === id)!;

test('decide: nothing missing is ok; root with apt installs the union of packages; a user gets one sudo line', () => {
  assert.equal(decide({ missing: [], manager: 'apt', root: true }).action, 'ok');
  const missing = [byId('sshd'), byId('python'), byId('chromium'), byId('shells')];
  const asRoot = decide({ missing, manager: 'apt', root: true });
  assert.equal(asRoot.action, 'install');
  assert.deepEqual(asRoot.argv![0], ['apt-get', 'update', '-qq']);
  assert.deepEqual(asRoot.argv![1]!.slice(0, 4), ['apt-get', 'install', '-y', '-qq']);
  assert.deepEqual(asRoot.packages, ['openssh-server', 'python3', 'python3-venv', 'chromium', 'zsh', 'fish', 'tcsh']);
  const asUser = decide({ missing, manager: 'apt', root: false });
  assert.equal(asUser.action, 'print');
  assert.equal(
    asUser.line,
    'sudo apt-get update && sudo apt-get install -y --no-install-recommends openssh-server python3 python3-venv chromium zsh fish tcsh',
  );
});

test('decide: dnf names its own packages; brew only prints (and says how macOS gets sshd); no manager lists the programs', () => {
  const missing = [byId('ssh'), byId('procps'), byId('code-server-build')];
  const dnf = decide({ missing, manager: 'dnf', root: true });
  assert.equal(dnf.action, 'install');
  assert.deepEqual(dnf.argv, [
    ['dnf', 'install', '-y', 'openssh-clients', 'procps-ng', 'krb5-devel', 'libsecret-devel', 'libX11-devel', 'libxkbfile-devel', 'make', 'gcc-c++'],
  ]);
  const brew = decide({ missing: [byId('sshd'), byId('tmux')], manager: 'brew', root: false });
  assert.equal(brew.action, 'print');
  assert.equal(brew.line, 'brew install tmux');
  assert.match(brew.hints!.join('\n'), /Remote Login/);
  const none = decide({ missing: [byId('tmux')], manager: undefined, root: true });
  assert.equal(none.action, 'print');
  assert.equal(none.line, undefined);
});

test('decide: only optional programs missing is not fatal; the command is still offered', () => {
  const plan = decide({ missing: [byId('busybox'), byId('shells')], manager: 'apt', root: false });
  assert.equal(plan.action, 'ok');
  assert.equal(plan.required.length, 0);
  assert.match(plan.line!, /busybox zsh fish tcsh$/);
});

test('isMet and detectManager read the PATH they are given, and the env overrides for fixed paths', () => {
  const empty = mkdtempSync(join(tmpdir(), 'rft-preflight-path-'));
  try {
    assert.equal(isMet(byId('tmux'), { PATH: empty }), false);
    assert.equal(isMet(byId('chromium'), { PATH: empty, CHROMIUM_PATH: join(empty, 'nope') }), false);
    assert.equal(detectManager(empty, 'linux'), undefined);
    writeFileSync(join(empty, 'tmux'), '#!/bin/sh\n');
    chmodSync(join(empty, 'tmux'), 0o755);
    writeFileSync(join(empty, 'dnf'), '#!/bin/sh\n');
    chmodSync(join(empty, 'dnf'), 0o755);
    assert.equal(isMet(byId('tmux'), { PATH: empty }), true);
    assert.equal(detectManager(empty, 'linux'), 'dnf');
    assert.equal(detectManager(empty, 'darwin'), undefined, 'on macOS only brew counts');
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

/** A PATH with only node and an apt-get that records its arguments and fails as asked. */
function barePath(aptExit: number): { dir: string; record: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'rft-preflight-bin-'));
  chmodSync(dir, 0o755);
  symlinkSync(process.execPath, join(dir, 'node'));
  const record = join(dir, 'apt-get.log');
  writeFileSync(join(dir, 'apt-get'), `#!/bin/sh\necho "$*" >> ${record}\nexit ${aptExit}\n`);
  chmodSync(join(dir, 'apt-get'), 0o755);
  // Fixed-path programs (sshd in /usr/sbin, /usr/bin/chromium) are pointed at nothing; the cache is empty, so
  // code-server's build tools are needed too (make and g++ are not on this PATH).
  const env = { PATH: dir, HOME: dir, RFT_CACHE: join(dir, 'cache'), SSHD_PATH: join(dir, 'no-sshd'), CHROMIUM_PATH: join(dir, 'no-chromium') };
  return { dir, record, env };
}

const EXPECTED = [
  'openssh-server',
  'openssh-client',
  'rsync',
  'tmux',
  'procps',
  'git',
  'chromium',
  'ripgrep',
  'python3',
  'python3-venv',
  'make',
  'g++',
  'busybox',
  'zsh',
  'fish',
  'tcsh',
];

test('as an unprivileged user on a bare PATH: prints the one apt-get line with every package, exits 2, installs nothing', (t) => {
  if (!existsSync('/usr/bin/setpriv')) {
    t.skip('setpriv (util-linux) is needed to run as another user');
    return;
  }
  const { dir, record, env } = barePath(0);
  try {
    const r = spawnSync('/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', join(dir, 'node'), SCRIPT, 'test'], { env, encoding: 'utf8' });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 2, out);
    const line = out.split('\n').find((l) => l.trim().startsWith('sudo apt-get update && sudo apt-get install'));
    assert.ok(line, out);
    for (const p of EXPECTED) assert.ok(line.split(/\s+/).includes(p), `${p} in: ${line}`);
    assert.match(out, /sshd: the loopback SSH host/);
    assert.doesNotMatch(out, /\n\s+at .*\(.*:\d+:\d+\)/, 'no stack trace');
    assert.equal(existsSync(record), false, 'apt-get was not run');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('as root on a bare PATH: runs apt-get update and install with the missing packages; a failed install exits 2 with the command', () => {
  assert.equal(process.getuid?.(), 0, 'this test runs as root (as CI does)');
  const { dir, record, env } = barePath(100);
  try {
    const r = spawnSync(join(dir, 'node'), [SCRIPT, 'test'], { env, encoding: 'utf8' });
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 2, out);
    const calls = readFileSync(record, 'utf8').trim().split('\n');
    assert.deepEqual(calls, ['update -qq'], 'install is not attempted after update failed');
    assert.match(out, /`apt-get update -qq` failed \(exit 100\)/);
    assert.match(out, /apt-get install -y --no-install-recommends openssh-server/);
    assert.doesNotMatch(out, /\n\s+at .*:\d+:\d+/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const ok = barePath(0);
  try {
    const r = spawnSync(join(ok.dir, 'node'), [SCRIPT, 'demo'], { env: ok.env, encoding: 'utf8' });
    const out = r.stdout + r.stderr;
    // apt-get "succeeded" but installed nothing: the preflight checks again and says what is still missing.
    assert.equal(r.status, 2, out);
    const calls = readFileSync(ok.record, 'utf8').trim().split('\n');
    assert.equal(calls[0], 'update -qq');
    const installed = calls[1]!.split(' ');
    assert.deepEqual(installed.slice(0, 4), ['install', '-y', '-qq', '--no-install-recommends']);
    for (const p of ['openssh-server', 'openssh-client', 'tmux', 'procps', 'ripgrep', 'python3-venv']) assert.ok(installed.includes(p), p);
    for (const p of ['chromium', 'rsync', 'busybox', 'zsh']) assert.ok(!installed.includes(p), `the demo does not need ${p}`);
    assert.match(out, /still missing after the install/);
  } finally {
    rmSync(ok.dir, { recursive: true, force: true });
  }
});
