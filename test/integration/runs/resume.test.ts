// Resume end to end against real components: a real OpenSSH server on loopback as the host, the real
// python-runner and the real torch/transformers/peft of the cached training venv (the host's RFT_PYTHON, as a GPU
// image's Python) training a tiny Llama-shaped model built here. One run trains uninterrupted; a second run of the
// same spec is stopped (Stop: SIGTERM, the runner saves a checkpoint) at step k and resumed through the
// RunManager, as the Runs view's Resume does: the same run id and folder, first logged step k+1, and the final
// adapter tensor-for-tensor the uninterrupted run's. Each run's adapter is its own: the second run, stopped and
// resumed, leaves the first run's adapter as it was. The GPU is an nvidia-smi STAND-IN
// (test/support/standins/nvidia-smi): no GPU exists here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { runFinished, sshStartRequest, testRunManager, trustingConnectOptions, until } from '../../support/runHosts';
import { buildTinyModel, trainingPython } from '../../harness/trainingVenv';
import type { ConnectOptions } from '../../../src/core/ssh/session';
import type { RunManager } from '../../../src/core/runs/lifecycle/runManager';
import { workspaceFromCommandScript } from '../../../src/core/runs/hosts/hostOps';

const REPO = resolve(__dirname, '../../..');
const STEPS = 24;
let sshd: Sshd;
let connectOptions: ConnectOptions;
let python: string;

before(async () => {
  python = trainingPython();
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')], env: { RFT_PYTHON: python, HF_HUB_OFFLINE: '1', HF_DATASETS_OFFLINE: '1' } });
  connectOptions = trustingConnectOptions([sshd]);
});
after(async () => {
  await sshd?.stop();
});

const spec = {
  version: 1,
  name: 'resume-builtin',
  model: { id: './tiny-model', params_b: 0.00013, attn_implementation: 'sdpa' },
  method: 'lora-bf16',
  data: { train: 'data/train.jsonl', text_field: 'text', max_seq_length: 64 },
  lora: { r: 8, alpha: 16, dropout: 0.0, target_modules: 'all-linear' },
  trainer: {
    max_steps: STEPS,
    per_device_batch_size: 2,
    gradient_accumulation: 1,
    learning_rate: 3e-3,
    // A decaying schedule with warmup: a resume that restarted it would end with other weights.
    lr_scheduler: 'linear',
    warmup_steps: 3,
    logging_steps: 1,
    save_steps: 1000,
    precision: 'bf16',
    optimizer: 'adamw_torch',
    seed: 7,
  },
  target: { provider: 'ssh', host: 'loopback', gpu: 'A100-40GB' },
  outputs: { dir: 'outputs' },
};

type Ev = { type: string; step?: number; loss?: number; status?: string; adapter_path?: string; code?: string; message?: string };

function events(m: RunManager, id: string): Ev[] {
  const f = join(m.localDirOf(id), 'events.jsonl');
  if (!existsSync(f)) return [];
  return readFileSync(f, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Ev);
}

const steps = (evs: readonly Ev[]): number[] => evs.filter((e) => e.type === 'metrics' && e.loss !== undefined).map((e) => e.step!);

function digest(dir: string): string {
  return createHash('sha256')
    .update(readFileSync(join(dir, 'adapter_model.safetensors')))
    .digest('hex');
}

/** The largest |a - b| over the two adapters' tensors, computed by the venv's torch; -1 when their names differ. */
function maxDiff(a: string, b: string): number {
  const script = `import sys
from safetensors.torch import load_file
x, y = load_file(sys.argv[1] + "/adapter_model.safetensors"), load_file(sys.argv[2] + "/adapter_model.safetensors")
print(-1 if sorted(x) != sorted(y) else max((x[k].float() - y[k].float()).abs().max().item() for k in x))`;
  return Number(execFileSync(python, ['-c', script, a, b], { encoding: 'utf8' }).trim());
}

test(
  'resume: stopped at step k and resumed through the run manager on a real sshd host, the run goes on at k+1 and ends with the uninterrupted adapter',
  { timeout: 900_000 },
  async () => {
    const storage = mkdtempSync(join(tmpdir(), 'rft-resume-storage-'));
    const m = testRunManager(storage, connectOptions);
    const ws = mkdtempSync(join(tmpdir(), 'rft-resume-ws-'));
    cpSync(join(REPO, 'examples/demo-host-builtin-lora/data'), join(ws, 'data'), { recursive: true });
    buildTinyModel(python, join(ws, 'tiny-model'));
    writeFileSync(join(ws, 'finetune.yaml'), JSON.stringify(spec));
    const req = { ...sshStartRequest(sshd, ws, 'resume-builtin', 'unused'), spec, specText: JSON.stringify(spec) };
    const remoteWs = (id: string): string => {
      const cmd = readFileSync(join(m.store.get(id)!.remoteDir!.replace(/^~\//, `${sshd.home}/`), 'command.sh'), 'utf8');
      return workspaceFromCommandScript(cmd)!;
    };

    // The uninterrupted run.
    const a = await m.start(req);
    const fa = await runFinished(m, a.id, 420_000);
    assert.equal(fa.record.status, 'completed', JSON.stringify(fa.failure));
    assert.deepEqual(
      steps(events(m, a.id)),
      Array.from({ length: STEPS }, (_, i) => i + 1),
    );
    const adapterA = join(remoteWs(a.id), 'outputs', a.id, 'adapter');
    const digestA = digest(adapterA);

    // The same spec, stopped at step k.
    const b = await m.start(req);
    await until('step 4 of the second run', () => (m.store.get(b.id)?.lastStep ?? 0) >= 4, 300_000);
    const stopped = runFinished(m, b.id, 300_000);
    await m.stop(b.id, 60_000);
    const fb = await stopped;
    assert.equal(fb.record.status, 'stopped', JSON.stringify(fb.failure));
    const before = events(m, b.id);
    const k = Math.max(...before.filter((e) => e.type === 'checkpoint').map((e) => e.step!));
    assert.ok(k >= 4 && k < STEPS, `checkpoint at step ${k}`);
    // Its adapter (saved on the way out) went to its own folder: the finished run's is untouched.
    assert.equal(digest(adapterA), digestA, "the stopped run wrote over the finished run's adapter");

    // Resume, as the Runs view's action does.
    const done = runFinished(m, b.id, 420_000);
    const resumed = await m.resume(b.id);
    assert.equal(resumed.id, b.id);
    assert.equal(resumed.status, 'running');
    const fr = await done;
    assert.equal(fr.record.status, 'completed', JSON.stringify(fr.failure));
    assert.deepEqual(
      fr.record.resumes?.map((r) => [r.from, r.fromStep]),
      [['stopped', k]],
    );
    const after = events(m, b.id).slice(before.length);
    const afterSteps = steps(after);
    console.log(`stopped at step ${k}; after Resume the first logged step is ${afterSteps[0]}, the last ${afterSteps[afterSteps.length - 1]}`);
    assert.equal(afterSteps[0], k + 1);
    assert.deepEqual(
      afterSteps,
      Array.from({ length: STEPS - k }, (_, i) => k + 1 + i),
    );
    assert.equal(after[after.length - 1]?.adapter_path, `outputs/${b.id}/adapter`);
    const adapterB = join(remoteWs(b.id), 'outputs', b.id, 'adapter');
    const diff = maxDiff(adapterB, adapterA);
    console.log(`max |resumed - uninterrupted| over the adapter tensors: ${diff}`);
    assert.equal(diff, 0, 'the resumed adapter differs from the uninterrupted one');
    assert.equal(digest(adapterA), digestA);
    // The mirror went on from its offsets: one log, both starts, byte-identical to the host's.
    const remoteRun = fr.record.remoteDir!.replace(/^~\//, `${sshd.home}/`);
    assert.equal(readFileSync(join(m.localDirOf(b.id), 'events.jsonl'), 'utf8'), readFileSync(join(remoteRun, 'events.jsonl'), 'utf8'));
    await m.dispose();
  },
);
