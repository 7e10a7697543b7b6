// Try the adapter (issue 20.2) against real parts: a real OpenSSH server on loopback is the GPU host, whose
// Python is the cached training venv (real torch, transformers and peft on CPU). A run of its own script saves a
// real LoRA adapter (non-zero weights) of a tiny Llama-shaped model built here; then RunManager.openGenerator
// starts `python -m remote_finetune generate` on the host over the run's SSH connection. Tokens arrive while the
// generation runs (Stop cancels it mid-way, from the first streamed piece), the process serves several prompts
// after one load, and the "Local CPU" generator on this machine gives the same greedy text.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { runFinished, sshStartRequest, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import { RANDOM_ADAPTER_SCRIPT, buildTinyModel, trainingPython } from '../../harness/trainingVenv';
import { openLocalGenerator } from '../../../src/core/runs/outputs/tryAdapter';
import type { AdapterGenerator } from '../../../src/core/runs/outputs/tryAdapter';
import type { ConnectOptions } from '../../../src/core/ssh/session';

const REPO = resolve(__dirname, '../../..');
let sshd: Sshd;
let connectOptions: ConnectOptions;

before(async () => {
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

async function collect(
  gen: AdapterGenerator,
  prompt: string,
  maxNewTokens: number,
  stopAfterFirst = false,
): Promise<{ chunks: string[]; stopped: boolean; tokens: number }> {
  const chunks: string[] = [];
  const abort = new AbortController();
  const t0 = Date.now();
  const r = await gen.generate(
    { prompt, temperature: 0, maxNewTokens, chat: false },
    (t) => {
      if (process.env.DBG) console.log('# chunk', Date.now() - t0, JSON.stringify(t));
      chunks.push(t);
      if (stopAfterFirst) abort.abort();
    },
    abort.signal,
  );
  return { chunks, stopped: r.stopped, tokens: r.tokens };
}

test(
  'try adapter: generate on the run host over SSH with the run venv streams tokens, Stop cancels, local CPU gives the same greedy text',
  { timeout: 600_000 },
  async () => {
    const python = trainingPython();
    const tmp = mkdtempSync(join(tmpdir(), 'rft-try-'));
    const model = join(tmp, 'tiny-model');
    buildTinyModel(python, model);
    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
    writeFileSync(join(ws, 'make_adapter.py'), RANDOM_ADAPTER_SCRIPT);
    const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
    // The host's python is the training venv: an own-script run has no bootstrap.json, so generate uses it too.
    const m = testRunManager(storage, connectOptions, { remotePython: python });
    const gens: AdapterGenerator[] = [];
    try {
      const req = sshStartRequest(sshd, ws, 'try-adapter', `${python} make_adapter.py ${model} outputs/adapter`);
      const rec = await m.start(req);
      const end = await runFinished(m, rec.id, 240_000);
      assert.equal(end.record.status, 'completed', JSON.stringify(end.record.failure));

      const remote = await m.openGenerator(rec.id);
      gens.push(remote);
      const info = await remote.ready();
      assert.equal(info.device, 'cpu');
      assert.equal(info.base, model, 'the base comes from the adapter_config.json');
      assert.match(info.adapter, /workspaces\/.+\/outputs\/adapter$/);
      assert.equal(info.chatTemplate, true);

      // Stop: cancelled from the first streamed piece, so that piece arrived while the process was still generating.
      const t0 = Date.now();
      const stopped = await collect(remote, 'The capital of France is', 200, true);
      assert.equal(stopped.stopped, true, `the generation ran to its end (${stopped.tokens} tokens) before Stop reached it`);
      assert.ok(stopped.tokens >= 1 && stopped.tokens < 200, `tokens ${stopped.tokens}`);
      assert.ok(stopped.chunks.length >= 1);
      const stopMs = Date.now() - t0;

      // The same process (one model load) answers again, in full this time: many pieces, greedy.
      const full = await collect(remote, 'The capital of Peru', 40);
      assert.equal(full.stopped, false);
      assert.ok(full.chunks.length > 1, `streamed in ${full.chunks.length} piece(s)`);
      const again = await collect(remote, 'The capital of Peru', 40);
      assert.deepEqual(again.chunks.join(''), full.chunks.join(''), 'temperature 0 is deterministic');

      // Local CPU: the same generate.py under a local python gives the same greedy text.
      const local = openLocalGenerator({ python, runnerDir: join(REPO, 'python-runner'), adapterPath: info.adapter });
      gens.push(local);
      assert.equal((await local.ready()).device, 'cpu');
      const localFull = await collect(local, 'The capital of Peru', 40);
      assert.equal(localFull.chunks.join(''), full.chunks.join(''));
      console.log(`# stop answered in ${stopMs} ms; ${full.tokens} tokens in ${full.chunks.length} pieces`);
    } finally {
      for (const g of gens) g.close(500);
      await m.dispose();
    }
  },
);

test('try adapter: an adapter that cannot be loaded is one clear error, and the process is gone', { timeout: 300_000 }, async () => {
  const python = trainingPython();
  const gen = openLocalGenerator({ python, runnerDir: join(REPO, 'python-runner'), adapterPath: join(tmpdir(), 'rft-no-such-adapter') });
  await assert.rejects(gen.ready(), /cannot load the adapter .*rft-no-such-adapter \(no such folder\)/);
  await assert.rejects(
    gen.generate({ prompt: 'x', temperature: 0, maxNewTokens: 4 }, () => undefined),
    /cannot load|ended/,
  );
  gen.close(100);
});
