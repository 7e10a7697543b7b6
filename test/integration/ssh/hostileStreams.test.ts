// The channels the extension streams into and then waits on, against the hostile host (test/support/hostileHost.ts):
// sync's apply command and extractors, upload stripes and the try-adapter generate process. A host that goes
// silent while an answer is awaited fails each within its idle limit, and one whose output never ends stops at
// the output cap, with an error naming the host and what was being done. Limits are made small through each
// operation's options; a test that would hang on unbounded code fails on its own timeout instead.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHostileHost, endless, reply, silence } from '../../support/hostileHost';
import type { Attack, HostileHost, Route } from '../../support/hostileHost';
import { connect } from '../../../src/core/ssh/session';
import type { SshSession } from '../../../src/core/ssh/session';
import { syncWorkspace } from '../../../src/core/ssh/sync';
import { sendPiece } from '../../../src/core/ssh/stripes';
import { openRemoteGenerator } from '../../../src/core/runs/outputs/tryAdapter';

const HUNG = { timeout: 10_000 };
const SMALL = { idleMs: 600, maxOutputBytes: 64 * 1024 };

let host: HostileHost;
const scratch = mkdtempSync(join(tmpdir(), 'rft-hostile-streams-'));
const ws = join(scratch, 'ws');
before(async () => {
  host = await startHostileHost();
  mkdirSync(ws);
  writeFileSync(join(ws, 'train.py'), 'print("hi")\n');
  writeFileSync(join(ws, 'big.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
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

async function failure(fn: () => Promise<unknown>): Promise<{ message: string; ms: number }> {
  const t0 = performance.now();
  try {
    await fn();
  } catch (err) {
    return { message: (err as Error).message, ms: performance.now() - t0 };
  }
  assert.fail('expected the operation to fail against the hostile host');
}

function assertNamesHost(message: string, what: RegExp): void {
  assert.ok(message.startsWith(`${host.alias}: `), `the error names the host first: ${message}`);
  assert.match(message, what);
}

// The state read answers "nothing here yet" (no manifest, no files); it also names the stage, so it goes first.
const EMPTY_STATE: Route = { match: /-printf/, attack: reply('\0') };
const sync = (s: SshSession, extra: object = {}): Promise<unknown> =>
  syncWorkspace(s, { localRoot: ws, remoteDir: '/home/hostile/ws', streams: 1, stripes: 1, limits: SMALL, ...extra });

test('sync: an apply command that takes the archive and never exits fails naming the host once the idle limit passes', HUNG, async () => {
  const f = await withSession([EMPTY_STATE, { match: /rft-stage/, attack: silence }], (s) => failure(() => sync(s)));
  assertNamesHost(f.message, /syncing to \/home\/hostile\/ws \(applying\): no answer in 0\.6 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('sync: an apply command whose stderr never ends stops at the output cap', HUNG, async () => {
  const f = await withSession([EMPTY_STATE, { match: /rft-stage/, attack: endless('x'.repeat(100), true) }], (s) => failure(() => sync(s)));
  assertNamesHost(f.message, /syncing to \/home\/hostile\/ws \(applying\): the host printed more than 64 KB/);
});

test('sync: an extractor stream that never exits fails naming the host and the stream', HUNG, async () => {
  // Two streams and enough files for the second: the extractor (set -e; mkdir …; echo $$ > …) is silent, the
  // apply command answers like a host that would wait for it.
  for (let i = 0; i < 70; i++) writeFileSync(join(ws, `f${i}.txt`), `${i}\n`);
  try {
    const f = await withSession([EMPTY_STATE, { match: /\.rft-x1\.pid/, attack: silence }, { match: /rft-stage/, attack: reply('', { code: 0 }) }], (s) =>
      failure(() => sync(s, { streams: 2 })),
    );
    assertNamesHost(f.message, /syncing to .*rft-stage-[0-9a-f]+ \(extracting stream 1\): no answer in 0\.6 s/);
  } finally {
    for (let i = 0; i < 70; i++) rmSync(join(ws, `f${i}.txt`));
  }
});

const piece = { file: { path: 'big.bin', size: 3 * 1024 * 1024, mode: 0o644, mtime: 1 }, offset: 0, length: 3 * 1024 * 1024 };

test('stripes: a host that never says how dd ended fails naming the host and the file', HUNG, async () => {
  const f = await withSession([{ match: /dd of=/, attack: silence }], (s) =>
    failure(() => sendPiece(s, join(ws, 'big.bin'), '/home/hostile/stage/f/big.bin', piece, undefined, SMALL)),
  );
  assertNamesHost(f.message, /uploading \/home\/hostile\/stage\/f\/big\.bin \(bytes from 0\): no answer in 0\.6 s/);
  assert.ok(f.ms < 5_000, `ended in ${f.ms} ms`);
});

test('stripes: endless stderr stops at the output cap', HUNG, async () => {
  const f = await withSession([{ match: /dd of=/, attack: endless('records in\n', true) }], (s) =>
    failure(() => sendPiece(s, join(ws, 'big.bin'), '/home/hostile/stage/f/big.bin', piece, undefined, SMALL)),
  );
  assertNamesHost(f.message, /uploading \/home\/hostile\/stage\/f\/big\.bin \(bytes from 0\): the host printed more than 64 KB/);
});

const TARGET = { runDir: '/home/hostile/runs/r1', runnerDir: '/home/hostile/runner', adapterPath: '/home/hostile/out/adapter', fallbackPython: 'python3' };
const PROMPT = { prompt: 'hi', temperature: 0, maxNewTokens: 16 };
const READY = `${JSON.stringify({ type: 'ready', base: 'b', adapter: 'a', device: 'cuda', chat_template: false })}\n`;

test('try adapter: a generate process that never says it loaded fails naming the host', HUNG, async () => {
  const f = await withSession([{ match: / generate /, attack: silence }], async (s) => {
    const gen = await openRemoteGenerator(s, TARGET, { loadIdleMs: 600 });
    return failure(() => gen.ready());
  });
  assertNamesHost(f.message, /loading the model and adapter to try: no answer in 0\.6 s/);
});

test('try adapter: a prompt the process never answers fails naming the host once the idle limit passes', HUNG, async () => {
  const f = await withSession([{ match: / generate /, attack: reply(READY, { then: 'silence' }) }], async (s) => {
    const gen = await openRemoteGenerator(s, TARGET, SMALL);
    await gen.ready();
    return failure(() => gen.generate(PROMPT, () => undefined));
  });
  assertNamesHost(f.message, /generating with the adapter: no answer in 0\.6 s/);
});

test('try adapter: tokens that never end stop at the output cap', HUNG, async () => {
  // Ready, then on the first request an endless stream of well-formed tokens for it.
  const flood: Attack = (ch, command) => {
    reply(READY, { then: 'silence' })(ch, command);
    ch.once('data', () => endless(`${JSON.stringify({ type: 'token', id: '1', text: 'la ' })}\n`)(ch, command));
  };
  let received = 0;
  const f = await withSession([{ match: / generate /, attack: flood }], async (s) => {
    const gen = await openRemoteGenerator(s, TARGET, SMALL);
    await gen.ready();
    return failure(() => gen.generate(PROMPT, (t) => void (received += t.length)));
  });
  assertNamesHost(f.message, /generating with the adapter: the host printed more than 64 KB/);
  assert.ok(received < 64 * 1024, `took ${received} characters of tokens`);
});
