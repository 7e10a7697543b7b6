// Hosts whose login shell is not bash. sshd hands every exec'd command to the login shell; here sshd's
// ForceCommand passes each one to zsh, fish or tcsh exactly as `$SHELL -c "…"` would (the sftp subsystem keeps
// its own server, as it does for a real fish user). Every remote operation the extension performs must work
// unchanged: connect, $HOME, sync (first and incremental), secrets over SFTP, detached runs under tmux and
// setsid, status, tail, stop and the GPU probe.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { execFileSync } from 'node:child_process';
import { startSshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { syncWorkspace } from '../../../src/core/ssh/sync';
import { startDetached, runStatus, stopRun, listRuns } from '../../../src/core/ssh/detachedJob';
import { tailFile } from '../../../src/core/ssh/tail';
import { probeGpus } from '../../../src/core/ssh/gpuProbe';
import { classifyProbeOutput, viaPosixShell } from '../../../src/core/ssh/loginShell';
import { connect, SshFatalError } from '../../../src/core/ssh/session';

const cleanups: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function files(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.set(relative(root, p), readFileSync(p, 'utf8'));
    }
  };
  walk(root);
  return out;
}

function put(root: string, rel: string, data: string): void {
  mkdirSync(dirname(join(root, rel)), { recursive: true });
  writeFileSync(join(root, rel), data);
}

const shells: ReadonlyArray<{ name: string; path: string; posix: boolean }> = [
  { name: 'bash', path: '/bin/bash', posix: true },
  { name: 'zsh', path: '/usr/bin/zsh', posix: false },
  { name: 'fish', path: '/usr/bin/fish', posix: false },
  { name: 'tcsh', path: '/usr/bin/tcsh', posix: false },
];

for (const shell of shells) {
  test(`login shell ${shell.name}: every remote operation works`, { timeout: 120_000 }, async (t) => {
    if (!existsSync(shell.path)) {
      t.skip(`${shell.path} is not installed here (.ci/run installs zsh, fish and tcsh)`);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), `rft-shell-${shell.name}-`));
    const forced = join(dir, 'login-shell');
    const trace = join(dir, 'commands.log');
    // The forced command is run by the real login shell (sh here); it records what arrived and hands it on.
    writeFileSync(
      forced,
      `#!/bin/sh\nif [ "$SSH_ORIGINAL_COMMAND" = internal-sftp ]; then exec /usr/lib/openssh/sftp-server; fi\n` +
        `printf '%s\\n' "$SSH_ORIGINAL_COMMAND" | head -c 200 >> '${trace}'; echo >> '${trace}'\nexec ${shell.path} -c "$SSH_ORIGINAL_COMMAND"\n`,
      { mode: 0o755 },
    );
    const sshd = await startSshd({ extraConfig: [`ForceCommand ${forced}`], env: { SHELL: shell.path } });
    const host = new SshHost({ host: 'shell-host' }, clientFor(sshd, { alias: 'shell-host' }).options);
    cleanups.push(async () => {
      host.close();
      await sshd.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    // SshHost hands the session out with the probe still running; a command sent meanwhile goes in the form
    // every shell passes on, and its output is handed over once the probe is in.
    const session = await host.session();
    const early = session.run(`printf '%s|' "a b" 'it'"'"'s'; echo $((2+3))`);
    await session.verified;
    assert.equal(session.loginShell, shell.posix ? 'posix' : 'other');
    assert.equal(await early, "a b|it's|5\n");
    assert.equal(await session.home(), sshd.home);
    // A POSIX login shell's probe already printed $HOME: home() sent no command of its own (elsewhere it
    // does, wrapped, so the trace holds it octal-escaped).
    if (shell.posix) assert.ok(!readFileSync(trace, 'utf8').includes(`printf '%s' "$HOME"`), 'home() reused the probe');
    assert.equal(await session.run(`printf '%s|' "a b" '$HOME' 'it'"'"'s' "back\\\\slash"; echo $((2+3))`), "a b|$HOME|it's|back\\slash|5\n");

    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-shell-'));
    cleanups.push(() => rmSync(ws, { recursive: true, force: true }));
    put(ws, 'train.py', 'print("hi")\n');
    put(ws, "odd name's $dir/*.yaml", 'lr: 1\n');
    for (let i = 0; i < 70; i++) put(ws, `pkg/f${i}.py`, `x = ${i}\n`);
    const remoteDir = '.remote-finetune/workspaces/shell';
    await syncWorkspace(session, { localRoot: ws, remoteDir });
    put(ws, 'train.py', 'print("edited")\n');
    rmSync(join(ws, 'pkg/f3.py'));
    const second = await syncWorkspace(session, { localRoot: ws, remoteDir });
    assert.equal(second.uploaded, 1);
    assert.equal(second.deleted, 1);
    assert.deepEqual(files(join(sshd.home, remoteDir)), files(ws));

    for (const launcher of ['tmux', 'setsid'] as const) {
      const runId = `shell-${shell.name}-${launcher}`;
      const started = await startDetached(session, {
        runId,
        launcher,
        command: 'echo "token is set: ${HF_TOKEN:+yes}"; i=0; while [ $i -lt 3 ]; do echo "step $i"; i=$((i+1)); done; exit 4',
        env: { HF_TOKEN: 'hf_shellSecret42' },
      });
      let log = '';
      for await (const item of tailFile(host, `${started.runDir}/output.log`, { untilPid: started.pid })) if (item.kind === 'data') log += item.data.toString();
      assert.equal(log, 'token is set: yes\nstep 0\nstep 1\nstep 2\n', `${launcher} log`);
      const st = await runStatus(session, runId);
      assert.equal(st.state, 'exited');
      assert.equal(st.exitCode, 4);
      assert.equal(statSync(join(started.runDir, 'env')).mode & 0o777, 0o600);
    }
    // A run that ignores TERM, with a child in its group: after the grace the whole group is killed, whichever
    // shell ran the stop (a fish or csh login shell's commands go through /bin/sh, dash here).
    const long = await startDetached(session, { runId: `shell-${shell.name}-stop`, launcher: 'setsid', command: "trap '' TERM; sleep 60 & wait; sleep 60" });
    const stopped = await stopRun(session, long.runId, { graceMs: 1000 });
    assert.notEqual(stopped.state, 'running');
    const left = execFileSync('ps', ['-eo', 'pgid=,stat=,args='], { encoding: 'utf8' })
      .split('\n')
      .filter((l) => l.trim().split(/\s+/)[0] === String(long.pid) && !/^Z/.test(l.trim().split(/\s+/)[1] ?? ''));
    assert.deepEqual(left, [], `nothing of the stopped run is left under ${shell.name}`);
    assert.ok((await listRuns(session)).some((r) => r.runId === `shell-${shell.name}-tmux`));
    const gpus = await probeGpus(session);
    assert.equal(gpus.kind, 'none', 'no nvidia-smi here: a clear "no NVIDIA GPU" result');
    // Nothing secret reached a command line, whatever shell parsed it.
    assert.ok(!readFileSync(trace, 'utf8').includes('hf_shellSecret42'));
  });
}

test('the wrapped form holds only characters that no shell treats specially inside single quotes', () => {
  const hostile = 'it\'s a \\ back\\slash\n$(rm -rf /) `x` !! "q" ü 日本';
  const line = viaPosixShell(hostile);
  const inner = /^exec \/bin\/sh -c '(.*)'$/.exec(line)?.[1];
  assert.ok(inner !== undefined);
  // No quote, newline or '!' at all, and a backslash only before an octal digit (fish's escapes inside single
  // quotes are \' and \\ only).
  assert.match(inner, /^(?:[^'\\!\n]|\\[0-7])+$/);
  const format = /^eval "\$\(printf "(.*)"\)"$/.exec(inner)?.[1];
  assert.ok(format !== undefined, inner);
  assert.equal(
    Buffer.from(
      format.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))),
      'latin1',
    ).toString('utf8'),
    hostile,
  );
  assert.deepEqual(classifyProbeOutput('rft-sh 42 \nrft-home /home/u\n'), { shell: 'posix', conclusive: true, home: '/home/u' });
  assert.deepEqual(classifyProbeOutput('rft-sh 42 \nrft-home /home/a b\n'), { shell: 'posix', conclusive: true, home: '/home/a b' });
  assert.deepEqual(classifyProbeOutput('rft-sh 42 \nrft-home \n'), { shell: 'posix', conclusive: true }, 'no HOME: home() asks later');
  assert.deepEqual(classifyProbeOutput('rft-sh 42 5.9\nrft-home /home/u\n'), { shell: 'other', conclusive: true }, 'zsh');
  assert.deepEqual(classifyProbeOutput('rft-sh 42 \n'), { shell: 'other', conclusive: false }, 'a cut-off probe proves nothing');
  assert.deepEqual(classifyProbeOutput(''), { shell: 'other', conclusive: false }, 'fish and csh reject the probe');
  assert.deepEqual(classifyProbeOutput('Welcome!\nrft-sh 42 \nrft-home /h\n'), { shell: 'posix', conclusive: true, noise: 'Welcome!\n', home: '/h' });
  assert.deepEqual(classifyProbeOutput('no newline rft-sh 42 \nrft-home /h\n'), { shell: 'other', conclusive: false });
});

for (const shell of shells.filter((s) => s.name === 'bash' || s.name === 'fish')) {
  test(`a ${shell.name} start-up file that prints to stdout is refused with what to fix; one that prints to stderr is fine`, { timeout: 60_000 }, async (t) => {
    if (!existsSync(shell.path)) {
      t.skip(`${shell.path} is not installed here (.ci/run installs it)`);
      return;
    }
    const dir = mkdtempSync(join(tmpdir(), `rft-noisy-${shell.name}-`));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const loginShell = (stream: string): string => {
      const path = join(dir, `login-${stream}`);
      writeFileSync(
        path,
        `#!/bin/sh\nif [ "$SSH_ORIGINAL_COMMAND" = internal-sftp ]; then exec /usr/lib/openssh/sftp-server; fi\n` +
          `echo 'Welcome to gpu-7 (conda: base)' ${stream === 'stderr' ? '>&2' : ''}\nexec ${shell.path} -c "$SSH_ORIGINAL_COMMAND"\n`,
        { mode: 0o755 },
      );
      return path;
    };
    const noisy = await startSshd({ extraConfig: [`ForceCommand ${loginShell('stdout')}`] });
    const quiet = await startSshd({ extraConfig: [`ForceCommand ${loginShell('stderr')}`] });
    cleanups.push(async () => {
      await noisy.stop();
      await quiet.stop();
    });
    const c = clientFor(noisy, { alias: 'noisy-host' });
    await assert.rejects(connect({ host: c.alias }, c.options), (e: unknown) => {
      assert.ok(e instanceof SshFatalError && e.code === 'shell-noise', String(e));
      assert.match(e.message, /Welcome to gpu-7 \(conda: base\)/);
      assert.match(e.message, /interactive/);
      return true;
    });
    // Through SshHost the session comes before the probe's verdict: the first command fails instead, with the
    // same message; none of its output is handed over, the connection is closed, and use() does not retry.
    const noisyHost = new SshHost({ host: c.alias }, c.options);
    cleanups.push(() => noisyHost.close());
    const s = await noisyHost.session();
    await assert.rejects(
      noisyHost.use((x) => x.run('echo never-seen')),
      (e: unknown) => e instanceof SshFatalError && e.code === 'shell-noise' && /Welcome to gpu-7/.test(e.message),
    );
    assert.ok(s.closed, 'the noisy connection is closed');
    assert.equal(noisyHost.connects, 1, 'a fatal verdict is not retried');
    const q = clientFor(quiet, { alias: 'quiet-host' });
    const session = await connect({ host: q.alias }, q.options);
    assert.equal(await session.run('echo ok'), 'ok\n');
    session.close();
  });
}
