// The extension's side of the generate protocol (core/runs/outputs/tryAdapter.ts) over a scripted pipe: what the runner
// would answer is written here line by line, so ordering, cancel, malformed and hostile lines, a fatal load error
// and a process that dies are each checked. The real process is in test/integration/runs/tryAdapter.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdapterGenerator, hostAdapterPath, remoteGenerateCommand, requestLine } from '../../../src/core/runs/outputs/tryAdapter';
import type { LinePipe } from '../../../src/core/runs/outputs/tryAdapter';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tryFromWebview, validate } from '../../../src/features/panels/messages';

class ScriptedPipe implements LinePipe {
  readonly written: Record<string, unknown>[] = [];
  ended = false;
  killed = false;
  private lineCb: (l: string) => void = () => undefined;
  private exitCb: (c: number | null, t: string) => void = () => undefined;
  onWrite: (m: Record<string, unknown>) => void = () => undefined;
  write(line: string): void {
    const m = JSON.parse(line) as Record<string, unknown>;
    this.written.push(m);
    this.onWrite(m);
  }
  end(): void {
    this.ended = true;
  }
  kill(): void {
    this.killed = true;
  }
  onLine(cb: (l: string) => void): void {
    this.lineCb = cb;
  }
  onExit(cb: (c: number | null, t: string) => void): void {
    this.exitCb = cb;
  }
  say(m: unknown): void {
    this.lineCb(typeof m === 'string' ? m : JSON.stringify(m));
  }
  exit(code: number | null, tail = ''): void {
    this.exitCb(code, tail);
  }
}

const READY = { type: 'ready', base: 'b', adapter: 'a', device: 'cpu', chat_template: true };

test('try adapter: tokens of the current request stream in order; others, junk and non-protocol lines are ignored', async () => {
  const pipe = new ScriptedPipe();
  const gen = new AdapterGenerator(pipe);
  pipe.say('Loading weights: 100%'); // not JSON
  pipe.say(READY);
  assert.deepEqual(await gen.ready(), { base: 'b', adapter: 'a', device: 'cpu', chatTemplate: true });
  pipe.onWrite = (m) => {
    if (m.type !== 'generate') return;
    const id = String(m.id);
    pipe.say({ type: 'token', id: 'other', text: 'NOT MINE' });
    pipe.say({ type: 'token', id, text: 'Par' });
    pipe.say({ type: 'token', id, text: 42 }); // wrong type: dropped
    pipe.say({ type: 'token', id, text: 'is.' });
    pipe.say({ type: 'done', id, tokens: 3, stopped: false, seconds: 0.1 });
  };
  const seen: string[] = [];
  const r = await gen.generate({ prompt: 'The capital of France is', temperature: 0, maxNewTokens: 8 }, (t) => seen.push(t));
  assert.deepEqual(seen, ['Par', 'is.']);
  assert.deepEqual(r, { tokens: 3, stopped: false, seconds: 0.1 });
  assert.deepEqual(pipe.written[0], { type: 'generate', id: '1', prompt: 'The capital of France is', temperature: 0, max_new_tokens: 8, chat: true });
});

test('try adapter: Stop sends a cancel for the running request; requests queue one after another', async () => {
  const pipe = new ScriptedPipe();
  const gen = new AdapterGenerator(pipe);
  pipe.say(READY);
  pipe.onWrite = (m) => {
    if (m.type === 'generate') pipe.say({ type: 'token', id: String(m.id), text: 'x' });
    if (m.type === 'cancel') pipe.say({ type: 'done', id: String(m.id), tokens: 1, stopped: true, seconds: 0.01 });
  };
  const abort = new AbortController();
  const first = gen.generate({ prompt: 'a', temperature: 1, maxNewTokens: 100 }, () => abort.abort(), abort.signal);
  const second = gen.generate({ prompt: 'b', temperature: 0, maxNewTokens: 5 }, () => undefined);
  assert.deepEqual(await first, { tokens: 1, stopped: true, seconds: 0.01 });
  await new Promise((r) => setImmediate(r));
  // The second request went out only after the first was done.
  assert.deepEqual(
    pipe.written.map((m) => [m.type, m.id]),
    [
      ['generate', '1'],
      ['cancel', '1'],
      ['generate', '2'],
    ],
  );
  pipe.say({ type: 'done', id: '2', tokens: 5, stopped: false, seconds: 0.02 });
  assert.equal((await second).tokens, 5);
  gen.close(10);
  assert.equal(pipe.ended, true);
});

test('try adapter: a fatal load error rejects ready and every request with the runner’s message; a dying process too', async () => {
  const pipe = new ScriptedPipe();
  const gen = new AdapterGenerator(pipe);
  pipe.say({ type: 'error', fatal: true, message: 'cannot load the adapter /x (no such folder)' });
  await assert.rejects(gen.ready(), /cannot load the adapter \/x/);
  await assert.rejects(
    gen.generate({ prompt: 'a', temperature: 0, maxNewTokens: 1 }, () => undefined),
    /cannot load/,
  );

  const pipe2 = new ScriptedPipe();
  const gen2 = new AdapterGenerator(pipe2);
  pipe2.say(READY);
  await gen2.ready();
  pipe2.onWrite = () => pipe2.exit(137, 'Traceback (most recent call last):\n  ...\nRuntimeError: CUDA out of memory\n');
  await assert.rejects(
    gen2.generate({ prompt: 'a', temperature: 0, maxNewTokens: 1 }, () => undefined),
    /exit 137.*CUDA out of memory/,
  );
  assert.equal(gen2.isOpen, false);
  // A per-request error leaves the session usable.
  const pipe3 = new ScriptedPipe();
  const gen3 = new AdapterGenerator(pipe3);
  pipe3.say(READY);
  pipe3.onWrite = (m) => pipe3.say({ type: 'error', id: String(m.id), message: 'prompt too long' });
  await assert.rejects(
    gen3.generate({ prompt: 'a', temperature: 0, maxNewTokens: 1 }, () => undefined),
    /prompt too long/,
  );
  assert.equal(gen3.isOpen, true);
});

test('try adapter: request limits are clamped; the remote command quotes every path and keeps secrets off it', () => {
  assert.deepEqual(requestLine('7', { prompt: 'p', temperature: 99, maxNewTokens: 1e9, chat: false, seed: 3 }), {
    type: 'generate',
    id: '7',
    prompt: 'p',
    temperature: 10,
    max_new_tokens: 4096,
    chat: false,
    seed: 3,
  });
  assert.equal(requestLine('1', { prompt: 'p', temperature: Number.NaN, maxNewTokens: 0 }).temperature, 0);
  assert.throws(() => requestLine('1', { prompt: 'x'.repeat(70_000), temperature: 0, maxNewTokens: 1 }), /longer than/);
  const cmd = remoteGenerateCommand({
    runDir: '/h/.remote-finetune/runs/r 1',
    runnerDir: '/h/runner/v',
    adapterPath: "/ws/o'ut/adapter",
    fallbackPython: 'python3',
  });
  assert.match(cmd, /^cd '\/h\/\.remote-finetune\/runs\/r 1' \|\| exit 1$/m);
  assert.ok(cmd.includes(`'/ws/o'\\''ut/adapter'`), cmd);
  assert.ok(cmd.includes(`--env-file '/h/.remote-finetune/runs/r 1/env'`), cmd);
  assert.ok(cmd.includes('bootstrap.json'), 'the run venv python from bootstrap.json first');
});

test("try adapter: the host adapter path comes from the finished event, else the run's own <outputs.dir>/<run id>/adapter", () => {
  const d = mkdtempSync(join(tmpdir(), 'rft-try-unit-'));
  const events = join(d, 'events.jsonl');
  assert.equal(hostAdapterPath('/ws', undefined, 'rft-1', events), '/ws/outputs/rft-1/adapter');
  assert.equal(hostAdapterPath('/ws', 'out/', 'rft-1', undefined), '/ws/out/rft-1/adapter');
  writeFileSync(events, `${JSON.stringify({ v: 1, ts: 1, type: 'finished', status: 'completed', exit_code: 0, adapter_path: 'runs/final' })}\nnot json\n`);
  assert.equal(hostAdapterPath('/ws', 'outputs', 'rft-1', events), '/ws/runs/final');
  writeFileSync(events, `${JSON.stringify({ v: 1, ts: 1, type: 'finished', status: 'completed', exit_code: 0, adapter_path: '/abs/adapter' })}\n`);
  assert.equal(hostAdapterPath('/ws', 'outputs', 'rft-1', events), '/abs/adapter');
});

test('try adapter: the panel’s messages are validated before dispatch', () => {
  const ok = { type: 'generate', requestId: 1, where: 'host', prompt: 'hi', temperature: 0.7, maxNewTokens: 256, chat: true };
  assert.equal(validate(tryFromWebview, ok).ok, true);
  assert.equal(validate(tryFromWebview, { type: 'stop', requestId: 1 }).ok, true);
  for (const bad of [
    { ...ok, where: 'elsewhere' },
    { ...ok, temperature: -1 },
    { ...ok, temperature: 3 },
    { ...ok, maxNewTokens: 0 },
    { ...ok, maxNewTokens: 1.5 },
    { ...ok, prompt: '' },
    { ...ok, prompt: 'x'.repeat(70_000) },
    { ...ok, python: '/tmp/evil' },
    { type: 'stop', requestId: -1 },
  ]) {
    assert.equal(validate(tryFromWebview, bad).ok, false, JSON.stringify(bad).slice(0, 80));
  }
});
