// The extension's host commands against a hostile host (test/support/hostileHost.ts: an ssh2 Server that passes
// the login-shell probe like a clean bash host, then meets commands with silence, endless output, a megabyte
// without a line end, links in every field, malformed events and tricky names). Each operation must end with an
// error that names the host and what was being done, within its time limit and without holding what the host
// sends. Limits are made small through each operation's overridable parameters so the file stays quick; a test
// that would hang on unbounded code fails on its own timeout instead.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHostileHost, endless, reply, silence } from '../../support/hostileHost';
import type { HostileHost, Route } from '../../support/hostileHost';
import type { ServerChannel } from 'ssh2';
import { connect } from '../../../src/core/ssh/session';
import { LOGIN_SHELL_PROBE } from '../../../src/core/ssh/loginShell';
import type { SshSession } from '../../../src/core/ssh/session';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { probeGpus } from '../../../src/core/ssh/gpuProbe';
import { listRuns, startDetached } from '../../../src/core/ssh/detachedJob';
import { tailFile } from '../../../src/core/ssh/tail';
import { downloadFolder } from '../../../src/core/runs/sync/artifacts';
import { runHostOp } from '../../../src/core/runs/hosts/hostOps';

const LINK = '[x](command:workbench.action.terminal.sendSequence?%7B%22text%22%3A%22rm%20-rf%20~%22%7D)';
// What a test may take at most before it counts as hung (the unbounded code never ends at all).
const HUNG = { timeout: 20_000 };

let host: HostileHost;
const scratch = mkdtempSync(join(tmpdir(), 'rft-hostile-test-'));
before(async () => {
  host = await startHostileHost();
});
after(async () => {
  await host?.close();
  rmSync(scratch, { recursive: true, force: true });
});

async function withSession<T>(routes: readonly Route[], fn: (s: SshSession) => Promise<T>): Promise<T> {
  host.setRoutes(routes);
  const s = await connect({ host: host.alias }, host.options);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

/** Runs `fn`, which must fail; returns its error, how long it took and how much the process grew meanwhile. */
async function failure(fn: () => Promise<unknown>): Promise<{ message: string; ms: number; grewMb: number }> {
  const rss = process.memoryUsage().rss;
  const t0 = performance.now();
  try {
    await fn();
  } catch (err) {
    return { message: (err as Error).message, ms: performance.now() - t0, grewMb: (process.memoryUsage().rss - rss) / 2 ** 20 };
  }
  assert.fail('expected the operation to fail against the hostile host');
}

async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const until = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > until) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function assertNamesHost(message: string, what: RegExp): void {
  assert.ok(message.startsWith(`${host.alias}: `), `the error names the host first: ${message}`);
  assert.match(message, what);
}

test('login-shell probe: endless output is cut off at once and its channel closed, and the session still works', HUNG, async () => {
  host.setProbe(endless(`${LINK}\n`));
  host.setRoutes([{ match: /echo/, attack: reply('hello\n') }]);
  try {
    const t0 = performance.now();
    const s = await connect({ host: host.alias }, host.options);
    try {
      const ms = performance.now() - t0;
      assert.ok(ms < 5_000, `connected in ${ms} ms`);
      // Inconclusive: every command then goes through /bin/sh, which works on any host.
      assert.equal(s.loginShell, 'other');
      await waitFor(() => host.closed.includes(LOGIN_SHELL_PROBE), 3_000, 'the probe channel was closed');
      assert.equal((await s.exec('echo hello', { timeoutMs: 2_000 })).stdout.toString(), 'hello\n');
    } finally {
      s.close();
    }
  } finally {
    host.setProbe(undefined);
  }
});

test('GPU probe: a host that never answers fails naming the host once its time limit passes', HUNG, async () => {
  const f = await withSession([{ match: /nvidia-smi/, attack: silence }], (s) => failure(() => probeGpus(s, undefined, { timeoutMs: 800 })));
  assertNamesHost(f.message, /probing its GPUs \(nvidia-smi\): no answer in 0\.8 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('GPU probe: endless garbage stops at the 1 MB cap, fast and without holding it', HUNG, async () => {
  const f = await withSession([{ match: /nvidia-smi/, attack: endless(`GPU 0: ${LINK}, 81920 MiB\r\x1b[2J`) }], (s) => failure(() => probeGpus(s)));
  assertNamesHost(f.message, /probing its GPUs \(nvidia-smi\): the host printed more than 1 MB/);
  assert.ok(f.ms < 10_000, `ended in ${f.ms} ms`);
  assert.ok(f.grewMb < 150, `grew ${f.grewMb} MB`);
});

test('Find Runs on Host: a silent host fails naming the host within the time limit', HUNG, async () => {
  const f = await withSession([{ match: /rft_status/, attack: silence }], (s) => failure(() => listRuns(s, undefined, { timeoutMs: 800 })));
  assertNamesHost(f.message, /listing its runs: no answer in 0\.8 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('Find Runs on Host: a listing that never ends stops at the output cap', HUNG, async () => {
  const line = `run-1\t123\t1\t\t2026-01-01T00:00:00Z\t1\t10\n`;
  const f = await withSession([{ match: /rft_status/, attack: endless(line) }], (s) =>
    failure(() => listRuns(s, undefined, { maxOutputBytes: 2 * 1024 * 1024 })),
  );
  assertNamesHost(f.message, /listing its runs: the host printed more than 2 MB/);
  assert.ok(f.ms < 10_000, `ended in ${f.ms} ms`);
  assert.ok(f.grewMb < 150, `grew ${f.grewMb} MB`);
});

test('Find Runs on Host: links in every field and tricky names leave only checked ids, numbers and times', HUNG, async () => {
  const rows = [
    [LINK, '123', '1', '0', LINK, '5', '10'],
    ['good-run', LINK, '1', LINK, LINK, LINK, LINK],
    ['../../etc', '2', '1', '0', '2026-01-01T00:00:00Z', '1', '1'],
    ['-rf', '2', '1', '0', '', '', ''],
    ['run\u202eexe.gpj', '2', '1', '0', '', '', ''],
    ['a\x1b[31mred', '2', '1', '0', '', '', ''],
    ['ok.run', '42', '0', '0', '2026-11-27T10:00:00Z', '3', '100'],
  ];
  const listing = rows.map((r) => r.join('\t')).join('\n') + '\n';
  const runs = await withSession([{ match: /rft_status/, attack: reply(listing) }], (s) => listRuns(s));
  assert.deepEqual(runs, [
    { runId: 'good-run', state: 'running' },
    { runId: 'ok.run', state: 'exited', pid: 42, exitCode: 0, startedAt: '2026-11-27T10:00:00Z', heartbeatAgeS: 3, outputBytes: 100 },
  ]);
});

test('tail: a megabyte with no line end instead of the size header fails at once naming the host', HUNG, async () => {
  host.setRoutes([{ match: /RFT-TAIL/, attack: reply('A'.repeat(1024 * 1024), { chunkBytes: 1024, then: 'silence' }) }]);
  const h = new SshHost({ host: host.alias }, host.options, { maxAttempts: 1 });
  try {
    const f = await failure(async () => {
      for await (const item of tailFile(h, '/home/hostile/.remote-finetune/runs/r1/events.jsonl', { follow: true })) void item;
    });
    assertNamesHost(
      f.message,
      /tailing \/home\/hostile\/\.remote-finetune\/runs\/r1\/events\.jsonl: the host's answer did not start with the expected size line/,
    );
    assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
  } finally {
    h.close();
  }
});

test('tail: a host that never prints the size header fails naming the host once the header time limit passes', HUNG, async () => {
  host.setRoutes([{ match: /RFT-TAIL/, attack: silence }]);
  const h = new SshHost({ host: host.alias }, host.options, { maxAttempts: 1 });
  try {
    const f = await failure(async () => {
      for await (const item of tailFile(h, '/home/hostile/out.log', { follow: true, headerTimeoutMs: 800 })) void item;
    });
    assertNamesHost(f.message, /tailing \/home\/hostile\/out\.log: no answer in 0\.8 s/);
    assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
  } finally {
    h.close();
  }
});

test('download probe: a silent host fails naming the host and the folder within the time limit', HUNG, async () => {
  const f = await withSession([{ match: /du -sb/, attack: silence }], (s) =>
    failure(() => downloadFolder(s, '/home/hostile/out', join(scratch, 'silent'), { probeLimits: { timeoutMs: 800 } })),
  );
  assertNamesHost(f.message, /sizing \/home\/hostile\/out for download: no answer in 0\.8 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('download probe: an endless file listing stops at the output cap', HUNG, async () => {
  const f = await withSession([{ match: /du -sb/, attack: endless(`999999999999 644 1700000000 ${LINK}/../../x\0`) }], (s) =>
    failure(() => downloadFolder(s, '/home/hostile/out', join(scratch, 'endless'))),
  );
  assertNamesHost(f.message, /sizing \/home\/hostile\/out for download: the host printed more than 4 MB/);
  assert.ok(f.ms < 10_000, `ended in ${f.ms} ms`);
  assert.ok(f.grewMb < 150, `grew ${f.grewMb} MB`);
});

test('download: a tar stream that goes quiet fails naming the host and the folder once the idle limit passes', HUNG, async () => {
  const routes = [
    { match: /du -sb/, attack: reply('100\nother\n') },
    { match: /tar -C/, attack: reply(Buffer.alloc(512, 0), { then: 'silence' }) },
  ];
  const f = await withSession(routes, (s) => failure(() => downloadFolder(s, '/home/hostile/out', join(scratch, 'quiet'), { idleTimeoutMs: 800 })));
  assertNamesHost(f.message, /downloading \/home\/hostile\/out: no answer in 0\.8 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('download: a tar whose stderr never ends stops at its cap', HUNG, async () => {
  const routes = [
    { match: /du -sb/, attack: reply('100\nother\n') },
    { match: /tar -C/, attack: endless(`tar: ${LINK}: Cannot open: Permission denied\n`, true) },
  ];
  const f = await withSession(routes, (s) => failure(() => downloadFolder(s, '/home/hostile/out', join(scratch, 'stderr'))));
  assertNamesHost(f.message, /downloading \/home\/hostile\/out \(on stderr\): the host printed more than 1 MB/);
  assert.ok(f.ms < 10_000, `ended in ${f.ms} ms`);
  assert.ok(f.grewMb < 150, `grew ${f.grewMb} MB`);
});

test('download: a tar and stripes that answer in their first packets, exit status included, are a success', HUNG, async () => {
  const mb = 1024 * 1024;
  const routes = [
    { match: /du -sb/, attack: reply(`${2 * mb + 1024}\ngnu\n${2 * mb} 644 1700000000 big.bin\0`) },
    // Each piece exactly as asked (count blocks of bs) and exit 0, the moment the command arrives.
    { match: /exec dd /, attack: (ch: ServerChannel, cmd: string) => reply(Buffer.alloc(Number(/count=(\d+)/.exec(cmd)?.[1]) * mb))(ch, cmd) },
    // An empty archive: two zero blocks.
    { match: /tar -C/, attack: reply(Buffer.alloc(1024, 0)) },
  ];
  const r = await withSession(routes, (s) => downloadFolder(s, '/home/hostile/out', join(scratch, 'prompt'), { stripeMinBytes: mb }));
  assert.equal(r.bytes, 2 * mb + 1024);
});

test('download: striped pieces of a large file that never come fail naming the host and the file', HUNG, async () => {
  const routes = [
    { match: /du -sb/, attack: reply(`4194304\ngnu\n4194304 644 1700000000 big.bin\0`) },
    { match: /exec dd /, attack: silence },
    // An empty archive: two zero blocks.
    { match: /tar -C/, attack: reply(Buffer.alloc(1024, 0), { delayMs: 100 }) },
  ];
  const f = await withSession(routes, (s) =>
    failure(() => downloadFolder(s, '/home/hostile/out', join(scratch, 'striped'), { idleTimeoutMs: 800, stripeMinBytes: 1024 * 1024 })),
  );
  assertNamesHost(f.message, /downloading big\.bin: no answer in 0\.8 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('download: a stripe that sends past the range asked for stops at once', HUNG, async () => {
  const routes = [
    { match: /du -sb/, attack: reply(`4194304\ngnu\n4194304 644 1700000000 big.bin\0`) },
    { match: /exec dd /, attack: endless('\0') },
    { match: /tar -C/, attack: reply(Buffer.alloc(1024, 0), { delayMs: 100 }) },
  ];
  const f = await withSession(routes, (s) => failure(() => downloadFolder(s, '/home/hostile/out', join(scratch, 'overlong'), { stripeMinBytes: 1024 * 1024 })));
  assertNamesHost(f.message, /downloading big\.bin: the host printed more than/);
  assert.ok(f.ms < 15_000, `ended in ${f.ms} ms`);
});

test('merge/push: a runner that never answers fails naming the host and the operation', HUNG, async () => {
  const f = await withSession([{ match: /remote_finetune/, attack: silence }], (s) =>
    failure(() =>
      runHostOp(s, 'python3 -m remote_finetune merge', '{}', () => undefined, undefined, { what: 'merging the adapter of run r1', timeoutMs: 800 }),
    ),
  );
  assertNamesHost(f.message, /merging the adapter of run r1: no answer in 0\.8 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('merge/push: endless output stops at the output cap', HUNG, async () => {
  const f = await withSession([{ match: /remote_finetune/, attack: endless(`{"op":"publish","stage":"upload","message":"${LINK}"}\n`) }], (s) =>
    failure(() =>
      runHostOp(s, 'python3 -m remote_finetune publish', '{}', () => undefined, undefined, {
        what: 'pushing run r1 to the Hugging Face Hub',
        maxOutputBytes: 4 * 1024 * 1024,
      }),
    ),
  );
  assertNamesHost(f.message, /pushing run r1 to the Hugging Face Hub: the host printed more than 4 MB/);
  assert.ok(f.ms < 10_000, `ended in ${f.ms} ms`);
  assert.ok(f.grewMb < 150, `grew ${f.grewMb} MB`);
});

test('start: a launch that answers with endless output fails naming the host and the run', HUNG, async () => {
  const f = await withSession([{ match: /wrapper\.sh/, attack: endless(`${LINK}\n`) }], (s) =>
    failure(() => startDetached(s, { runId: 'r1', command: 'true', launcher: 'setsid' })),
  );
  assertNamesHost(f.message, /starting run r1: the host printed more than 1 MB/);
  assert.ok(f.ms < 10_000, `ended in ${f.ms} ms`);
  assert.ok(f.grewMb < 150, `grew ${f.grewMb} MB`);
});
