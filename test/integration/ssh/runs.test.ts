// Detached runs against a real sshd: wrapper records, status, stop (TERM then KILL), listing runs started by
// another client, surviving a dropped connection, and secrets that never leave the 0600 env file.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import type { ClientSetup } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { startDetached, runStatus, stopRun, listRuns, detectLauncher } from '../../../src/core/ssh/detachedJob';
import type { HostRunStatus } from '../../../src/core/ssh/detachedJob';
import { tailFile } from '../../../src/core/ssh/tail';
import { shellQuote } from '../../../src/core/ssh/quote';

const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
let sshd: Sshd;
let client: ClientSetup;
let host: SshHost;
const logLines: string[] = [];

before(async () => {
  sshd = await startSshd();
  client = clientFor(sshd, { options: { log: (m: string) => logLines.push(m) } });
  host = new SshHost({ host: client.alias }, client.options);
});
after(async () => {
  host.close();
  await sshd.stop();
});

async function waitFor(runId: string, pred: (s: HostRunStatus) => boolean, timeoutMs = 20_000): Promise<HostRunStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await host.use((x) => runStatus(x, runId));
    if (pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`run ${runId} stuck: ${JSON.stringify(s)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

for (const launcher of ['setsid', 'tmux'] as const) {
  test(`${launcher}: wrapper records pid, start time, output and exit code`, async () => {
    const session = await host.session();
    const started = await startDetached(session, { runId: `basic-${launcher}`, command: 'echo out; echo err >&2; exit 5', launcher, spec: { model: 'tiny' } });
    assert.equal(started.launcher, launcher);
    const done = await waitFor(started.runId, (s) => s.state === 'exited');
    assert.equal(done.exitCode, 5);
    assert.equal(done.pid, started.pid);
    assert.match(done.startedAt ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const dir = join(sshd.home, '.remote-finetune', 'runs', started.runId);
    assert.equal(readFileSync(join(dir, 'output.log'), 'utf8'), 'out\nerr\n');
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'spec.json'), 'utf8')), { model: 'tiny' });
  });
}

test('a run survives its SSH connection being killed, and its status is read after reconnecting', async () => {
  const session = await host.session();
  const started = await startDetached(session, { runId: 'survivor', command: 'sleep 2; echo finished; exit 4' });
  assert.ok(sshd.killConnectionChildren() > 0);
  const s = await host.use((x) => runStatus(x, 'survivor'));
  assert.equal(s.state, 'running', JSON.stringify(s));
  const done = await waitFor(started.runId, (x) => x.state === 'exited');
  assert.equal(done.exitCode, 4);
  assert.equal(readFileSync(join(sshd.home, '.remote-finetune/runs/survivor/output.log'), 'utf8'), 'finished\n');
});

test('stop: SIGTERM ends a cooperative run at once (143); one that ignores TERM is killed after the grace (137)', async () => {
  const session = await host.session();
  await startDetached(session, { runId: 'stop-term', command: 'sleep 60' });
  await startDetached(session, { runId: 'stop-kill', command: "trap '' TERM; sleep 60 & wait; sleep 60" });
  await waitFor('stop-kill', (s) => s.state === 'running');
  const t0 = Date.now();
  const a = await stopRun(session, 'stop-term', { graceMs: 5000 });
  assert.equal(a.state, 'exited');
  assert.equal(a.exitCode, 143);
  assert.ok(Date.now() - t0 < 4000, 'no grace wait for a run that obeys SIGTERM');
  const t1 = Date.now();
  const b = await stopRun(session, 'stop-kill', { graceMs: 1500 });
  assert.ok(Date.now() - t1 >= 1400, 'waited the grace period before SIGKILL');
  assert.equal(b.state, 'exited');
  assert.equal(b.exitCode, 137);
  // The whole process group is gone: no `sleep 60` of either run is left. (Zombies are skipped: this
  // container's pid 1 does not reap orphans, a real host's init does.)
  const left = await session.run(`ps -eo pid,pgid,stat,args | awk '($2 == ${a.pid ?? 0} || $2 == ${b.pid ?? 0}) && $3 !~ /^Z/' | grep -v awk || true`);
  assert.equal(left.trim(), '');
});

test('stop returns only when the training process group is gone too, not when the wrapper is (a launcher still shutting down)', async () => {
  const session = await host.session();
  // The run's training group (as run.py's train.pgid names it) takes 1.5 s to end after its TERM, while the
  // command ends at once: the wrapper exits well inside the grace period with the training process still alive.
  const command =
    `setsid sh -c 'echo $$ > "$RFT_RUN_DIR/train.pgid"; trap "sleep 1.5; exit 0" TERM; while :; do sleep 0.1; done' & ` +
    `trap 'kill -TERM "-$(cat "$RFT_RUN_DIR/train.pgid")"; exit 143' TERM; while :; do sleep 0.1; done`;
  await startDetached(session, { runId: 'stop-slow-group', command });
  const pgidFile = join(sshd.home, '.remote-finetune/runs/stop-slow-group/train.pgid');
  await waitFor('stop-slow-group', (s) => s.state === 'running' && existsSync(pgidFile) && readFileSync(pgidFile, 'utf8').trim() !== '');
  const tp = Number(readFileSync(pgidFile, 'utf8').trim());
  const t0 = Date.now();
  const st = await stopRun(session, 'stop-slow-group', { graceMs: 10_000 });
  const took = Date.now() - t0;
  assert.equal(st.state, 'exited');
  const left = await session.run(`ps -eo pgid,stat,args | awk '$1 == ${tp} && $2 !~ /^Z/' | grep -v awk || true`);
  assert.equal(left.trim(), '', `the training group ${tp} still had live processes when stop returned (after ${took} ms)`);
  assert.ok(took < 8000, `stop waited for the group, not for the whole grace period (${took} ms)`);
});

test('stop refuses a pid file that names no single run process (0, 1, negative): kill -1 would reach every process', async () => {
  const session = await host.session();
  const dir = join(sshd.home, '.remote-finetune/runs/stop-bad-pid');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'wrapper.sh'), '');
  // Only the harmless case is tried for real: `kill -TERM -0` would end the stop command's own process group
  // (and with it this call); -1 and 1 are refused by the same check.
  for (const text of ['0\n', '-0\n', 'x\n']) {
    writeFileSync(join(dir, 'pid'), text);
    const st = await stopRun(session, 'stop-bad-pid', { graceMs: 500 });
    assert.notEqual(st.state, 'running', text);
    assert.equal(st.pid, undefined, `no pid from a pid file of ${JSON.stringify(text)}`);
    assert.ok(!existsSync(join(dir, 'exit_code')), `no exit code written for a pid file of ${JSON.stringify(text)}`);
  }
});

test('listRuns shows runs started from another machine (another client, key and known-hosts store)', async () => {
  const other = clientFor(sshd);
  const otherHost = new SshHost({ host: other.alias }, other.options);
  await startDetached(await otherHost.session(), { runId: 'from-laptop-2', command: 'exit 0' });
  otherHost.close();
  const runs = await listRuns(await host.session());
  const ids = runs.map((r) => r.runId);
  assert.ok(ids.includes('from-laptop-2'), ids.join(','));
  assert.ok(ids.includes('survivor'));
  assert.equal((await runStatus(await host.session(), 'no-such-run')).state, 'missing');
  assert.equal((await runStatus(await host.session(), '../etc')).state, 'missing');
});

test('secrets: only in the 0600 env file; never in ps args, logs, run files or anything the client writes', async () => {
  const secrets = { HF_TOKEN: 'hf_S3cr3tValue_4f9a2b', WANDB_API_KEY: "wandb-'quoted' $(not run) `x`", AWS_SECRET_ACCESS_KEY: 'aws/Secret+Key=9' };
  const session = await host.session();
  // The job proves it received the values (by comparing inside the shell) without printing them.
  const command = [
    'for i in 1 2 3 4 5 6 7 8 9 10; do',
    `  [ "$(printf %s "$HF_TOKEN" | sha256sum | cut -c1-64)" = ${sha256(secrets.HF_TOKEN)} ] && echo hf-ok`,
    '  printf \'{"v":1,"type":"metrics","step":%s}\\n\' "$i" >> events.jsonl',
    '  sleep 0.2',
    'done',
    `[ "$(printf %s "$WANDB_API_KEY" | sha256sum | cut -c1-64)" = ${sha256(secrets.WANDB_API_KEY)} ]`,
  ].join('\n');
  const started = await startDetached(session, { runId: 'secret-run', command, env: secrets, cwd: '.remote-finetune/runs/secret-run' });
  const psSnapshots: string[] = [];
  while ((await runStatus(session, 'secret-run')).state === 'running') {
    psSnapshots.push(await session.run('ps -eo args'));
    await new Promise((r) => setTimeout(r, 150));
  }
  assert.ok(psSnapshots.length >= 3, 'ps was sampled while the job ran');
  assert.ok(
    psSnapshots.some((p) => p.includes('wrapper.sh')),
    'the sampled ps output does show the run',
  );
  const done = await runStatus(session, 'secret-run');
  assert.equal(done.exitCode, 0);
  let received = '';
  for await (const item of tailFile(host, `${started.runDir}/output.log`)) if (item.kind === 'data') received += item.data.toString();
  assert.match(received, /hf-ok/);
  const envStat = statSync(join(started.runDir, 'env'));
  assert.equal(envStat.mode & 0o777, 0o600);
  const haystacks: Array<[string, string]> = psSnapshots.map((p, i) => [`ps #${i}`, p]);
  haystacks.push(['received log', received], ['client log lines', logLines.join('\n')]);
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, name.name);
      if (name.isDirectory()) walk(p);
      else if (name.isFile() && !(p === join(started.runDir, 'env'))) haystacks.push([p, readFileSync(p, 'latin1')]);
    }
  };
  walk(started.runDir);
  walk(client.dir);
  haystacks.push(['sshd log', readFileSync(join(sshd.dir, 'sshd.log'), 'latin1')]);
  for (const value of Object.values(secrets)) {
    for (const [where, text] of haystacks) assert.ok(!text.includes(value), `secret found in ${where}`);
  }
  // And the env file does hold them: the check above is not vacuous.
  const envText = readFileSync(join(started.runDir, 'env'), 'utf8');
  for (const value of Object.values(secrets)) assert.ok(envText.includes(value.replace(/'/g, "'\\''")));
});

test('systemd-run --user is picked where the user manager lingers (stand-in systemd-run, loginctl, systemctl), and the run is recorded and survives a dropped connection', async () => {
  // Stand-ins: there is no user systemd here. The fake systemd-run logs its argv and, like a transient
  // service, starts the command outside the SSH session.
  const bin = mkdtempSync(join(tmpdir(), 'rft-systemd-'));
  const argvLog = join(bin, 'systemd-run.argv');
  writeFileSync(
    join(bin, 'systemd-run'),
    `#!/bin/sh
printf '%s\\n' "$@" > ${JSON.stringify(argvLog)}
while [ $# -gt 0 ]; do case "$1" in --user|--collect|--quiet) shift;; --unit) shift 2;; --setenv=*) export "\${1#--setenv=}"; shift;; *) break;; esac; done
setsid "$@" </dev/null >/dev/null 2>&1 &
`,
    { mode: 0o755 },
  );
  writeFileSync(join(bin, 'loginctl'), '#!/bin/sh\necho yes\n', { mode: 0o755 });
  writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  const s = await startSshd({ pathPrepend: [bin] });
  const c = clientFor(s, { alias: 'systemd-host' });
  const h = new SshHost({ host: c.alias }, c.options);
  try {
    const session = await h.session();
    assert.equal(await detectLauncher(session), 'systemd-run');
    const started = await startDetached(session, {
      runId: 'sd-1',
      command: 'echo "path has $(echo "$PATH" | tr : "\\n" | grep -c systemd)"; sleep 1; exit 3',
      launcher: 'auto',
      spec: { model: 'tiny' },
      env: { HF_TOKEN: 'hf_systemdSecret123' },
    });
    assert.equal(started.launcher, 'systemd-run');
    const argv = readFileSync(argvLog, 'utf8').split('\n');
    assert.deepEqual(argv.slice(0, 5), ['--user', '--collect', '--quiet', '--unit', 'rft-sd-1']);
    assert.ok(
      argv.some((a) => a.startsWith('--setenv=PATH=') && a.includes(bin)),
      'the session PATH is carried into the unit',
    );
    assert.ok(!argv.join(' ').includes('hf_systemdSecret123'), 'no secret on the launcher command line');
    assert.ok(s.killConnectionChildren() > 0);
    const deadline = Date.now() + 20_000;
    let st = await h.use((x) => runStatus(x, 'sd-1'));
    while (st.state !== 'exited' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      st = await h.use((x) => runStatus(x, 'sd-1'));
    }
    assert.equal(st.state, 'exited');
    assert.equal(st.exitCode, 3);
    assert.match(readFileSync(join(s.home, '.remote-finetune/runs/sd-1/output.log'), 'utf8'), /path has 1/);
  } finally {
    h.close();
    await s.stop();
  }
});

test('a host without SFTP: starting a run says so plainly, writes no secret anywhere else, and a later try works once it is back', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-nosftp-'));
  const flag = join(dir, 'sftp-off');
  writeFileSync(flag, '');
  // The forced command refuses the sftp subsystem while the flag exists (as a host with no Subsystem line does).
  const forced = join(dir, 'forced');
  writeFileSync(
    forced,
    `#!/bin/sh\nif [ "$SSH_ORIGINAL_COMMAND" = internal-sftp ]; then [ -e '${flag}' ] && { echo 'subsystem request failed' >&2; exit 1; }; exec /usr/lib/openssh/sftp-server; fi\nexec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n`,
    { mode: 0o755 },
  );
  const s = await startSshd({ extraConfig: [`ForceCommand ${forced}`] });
  const h = new SshHost({ host: 'nosftp' }, clientFor(s, { alias: 'nosftp' }).options);
  try {
    const session = await h.session();
    await assert.rejects(
      startDetached(session, { runId: 'nosftp-1', command: 'echo hi', env: { HF_TOKEN: 'hf_noSftpSecret9' } }),
      (e: Error) => /SFTP subsystem on nosftp did not start/.test(e.message) && /Subsystem sftp/.test(e.message),
    );
    const leaked = await session.run(`grep -rl hf_noSftpSecret9 ${shellQuote(s.home)} || true`);
    assert.equal(leaked.trim(), '', 'the secret was not written some other way');
    assert.equal(existsSync(join(s.home, '.remote-finetune/runs/nosftp-1')), false, 'no half-made run is left behind');
    rmSync(flag);
    const started = await startDetached(session, { runId: 'nosftp-2', command: 'echo hi', env: { HF_TOKEN: 'hf_noSftpSecret9' } });
    assert.ok(started.pid > 0, 'SFTP is tried again, not remembered as broken');
  } finally {
    h.close();
    await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('followed files exist, empty and 0600, when the run starts (tail -F then follows them at once); Resume appends to them', async () => {
  const session = await host.session();
  const followed = ['output.log', 'events.jsonl', 'gpu.csv'];
  const started = await startDetached(session, { runId: 'followed-1', command: 'sleep 1; echo later', launcher: 'setsid', followed });
  const dir = join(sshd.home, '.remote-finetune', 'runs', started.runId);
  for (const f of ['events.jsonl', 'gpu.csv']) {
    assert.ok(existsSync(join(dir, f)), `${f} exists before the run writes it`);
    assert.equal(statSync(join(dir, f)).size, 0);
    assert.equal(statSync(join(dir, f)).mode & 0o777, 0o600, `${f} is the user's alone`);
  }
  await waitFor(started.runId, (s) => s.state === 'exited');
  writeFileSync(join(dir, 'events.jsonl'), '{"type":"started"}\n');
  await startDetached(session, { runId: 'followed-1', command: 'echo again', launcher: 'setsid', followed, reuse: true });
  await waitFor(started.runId, (s) => s.state === 'exited' && s.exitCode === 0);
  assert.equal(readFileSync(join(dir, 'events.jsonl'), 'utf8'), '{"type":"started"}\n', 'Resume does not truncate');
  assert.equal(readFileSync(join(dir, 'output.log'), 'utf8'), 'later\nagain\n');
  await assert.rejects(startDetached(session, { runId: 'followed-2', command: 'true', followed: ['../escape'] }), /not a file name in a run folder/);
  assert.ok(!existsSync(join(sshd.home, '.remote-finetune', 'runs', 'followed-2')), 'refused before anything is made');
});
