// Start Training's decisions without VS Code (core/runs/lifecycle/startSteps.ts): the steps are driven here the
// way the command object drives them, with scripted answers, and every step asked is recorded. Nothing billable
// (a target pick, the start gate, the cloud key, the start) may come after a refusal or a cancelled pick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nextStartStep } from '../../../src/core/runs/lifecycle/startSteps';
import type { StartAnswers, StartContext, StartStep, TargetChoice } from '../../../src/core/runs/lifecycle/startSteps';
import { startConfirmation } from '../../../src/core/runs/lifecycle/startConfirmation';
import { runEnv } from '../../../src/core/runs/lifecycle/runEnv';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { fitOn } from '../../../src/core/runs/lifecycle/runPlan';
import type { Offer, Provider } from '../../../src/core/providers/provider';

const QLORA = `version: 1
name: steps-qlora
model:
  id: meta-llama/Llama-3.1-8B
method: qlora
quantization:
  load_in_4bit: true
lora:
  r: 16
data:
  train: data/train.jsonl
  max_seq_length: 1024
trainer:
  per_device_batch_size: 1
  gradient_accumulation: 16
  gradient_checkpointing: true
target:
  provider: ssh
  gpu: A100-40GB
`;

/** A run spec in its own folder, with the data file it names (no "not in the workspace" warning). */
function specFile(text: string): { path: string; text: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rft-start-steps-'));
  mkdirSync(join(dir, 'data'));
  writeFileSync(join(dir, 'data/train.jsonl'), '{"text":"a"}\n{"text":"b"}\n');
  const path = join(dir, 'finetune.yaml');
  writeFileSync(path, text);
  return { path, text };
}

function ctxOf(over: Partial<StartContext> = {}): StartContext {
  return {
    trusted: true,
    a100: false,
    files: () => nodeFiles,
    pastRuns: () => [],
    workspaceRootOf: () => undefined,
    displayPath: (p) => p,
    ...over,
  };
}

type Answer = (step: StartStep) => StartAnswers | 'stop';

/** Drives the steps to their end like StartTrainingCommand.run does; returns the kinds asked and the last step. */
function drive(ctx: StartContext, answer: Answer): { asked: string[]; last: StartStep; steps: StartStep[] } {
  let answers: StartAnswers = {};
  const steps: StartStep[] = [];
  for (let i = 0; i < 20; i++) {
    const step = nextStartStep(ctx, answers);
    steps.push(step);
    if (step.kind === 'end' || step.kind === 'refuse' || step.kind === 'start') return { asked: steps.map((s) => s.kind), last: step, steps };
    const a = answer(step);
    if (a === 'stop') return { asked: steps.map((s) => s.kind), last: step, steps };
    answers = { ...answers, ...a };
  }
  throw new Error(`no end after 20 steps: ${steps.map((s) => s.kind).join(' → ')}`);
}

const BILLABLE = ['pickTarget', 'gate', 'cloudKey', 'start'];

/** Answers every question "yes" and every pick with the given values. */
function yes(spec: { path: string; text: string }, picks: { gpu?: string; target?: TargetChoice } = {}): Answer {
  return (step) => {
    switch (step.kind) {
      case 'pickSpec':
        return { spec };
      case 'confirmWarnings':
        return { warnings: true };
      case 'pickGpu':
        return { gpu: picks.gpu ?? 'A100-80GB' };
      case 'confirmNoFit':
        return { noFit: true };
      case 'pickTarget':
        return { target: picks.target ?? { kind: 'ssh', host: 'gpu-box' } };
      case 'gate':
        return { gate: { env: { HF_TOKEN: 'x' } } };
      case 'cloudKey':
        return { cloudKey: { privateKeyPath: '/k/cloud_ed25519', publicKey: 'ssh-ed25519 AAAA test' } };
      default:
        return 'stop';
    }
  };
}

test('startSteps: an untrusted workspace is refused before the spec is even picked', () => {
  const { asked, last } = drive(ctxOf({ trusted: false }), yes(specFile(QLORA)));
  assert.deepEqual(asked, ['refuse']);
  assert.equal(last.kind === 'refuse' && last.reason, 'untrusted');
});

test('startSteps: a spec with an error is refused with its lines before anything is billed', () => {
  // bf16 on a T4: RFT error, the spec names the GPU.
  const spec = specFile(
    `${QLORA.replace('gradient_checkpointing: true\n', 'gradient_checkpointing: true\n  precision: bf16\n').replace('gpu: A100-40GB', 'gpu: T4')}`,
  );
  const { asked, last } = drive(ctxOf(), yes(spec));
  assert.deepEqual(asked, ['pickSpec', 'refuse']);
  assert.ok(last.kind === 'refuse' && last.reason === 'specErrors', JSON.stringify(last));
  assert.match(last.message, /^1 error\(s\) in .*finetune\.yaml block the run\.$/);
  assert.match(last.detail ?? '', /^line \d+: RFT\d+ /);
  assert.ok(!asked.some((k) => BILLABLE.includes(k)));
});

test('startSteps: the A100 command fixes the GPU: the spec is checked for the A100, no GPU picker, A100 in the request', () => {
  // The same bf16-on-T4 spec: "on A100" checks it for the A100 it will get, so T4's "no bf16" does not block it.
  const spec = specFile(
    `${QLORA.replace('gradient_checkpointing: true\n', 'gradient_checkpointing: true\n  precision: bf16\n').replace('gpu: A100-40GB', 'gpu: T4')}`,
  );
  const { asked, last, steps } = drive(ctxOf({ a100: true }), yes(spec));
  assert.deepEqual(asked, ['pickSpec', 'pickTarget', 'gate', 'start']);
  const pick = steps.find((s) => s.kind === 'pickTarget');
  assert.deepEqual(pick?.kind === 'pickTarget' && pick.gpus, ['A100-40GB', 'A100-80GB']);
  assert.ok(last.kind === 'start');
  assert.equal(last.request.gpu, 'A100-40GB');
  assert.deepEqual(last.request.target, { kind: 'ssh', host: 'gpu-box' });
  assert.deepEqual(last.request.env, { HF_TOKEN: 'x' });
});

test('startSteps: an estimate that does not fit asks with the cheapest fixes; declining starts nothing', () => {
  // A full 8B fine-tune: its check on the spec's A100-80GB passes, and the estimate for the run is a T4's (the
  // estimator speaks last where the two differ).
  const spec = specFile(
    QLORA.replace('method: qlora\nquantization:\n  load_in_4bit: true\nlora:\n  r: 16\n', 'method: full\n').replace('A100-40GB', 'A100-80GB'),
  );
  const ctx = ctxOf({
    fitOn: (plan, gpus) =>
      fitOn(
        plan,
        gpus.map(() => 'T4'),
        nodeFiles,
      ),
  });
  const declined = drive(ctx, (step) => (step.kind === 'confirmNoFit' ? { noFit: false } : yes(spec)(step)));
  assert.deepEqual(declined.asked, ['pickSpec', 'confirmNoFit', 'end'], JSON.stringify(declined.last).slice(0, 300));
  const ask = declined.steps[1]!;
  assert.ok(ask.kind === 'confirmNoFit');
  assert.match(ask.message, /^The estimate says this run does not fit: .* on T4 \(does not fit\)/);
  assert.match(ask.fixes ?? '', /^Cheapest fixes: .*QLoRA/);
  const accepted = drive(ctx, yes(spec));
  assert.deepEqual(accepted.asked, ['pickSpec', 'confirmNoFit', 'pickTarget', 'gate', 'start']);
  // Without the override the same spec fits its A100-80GB: no question.
  assert.deepEqual(drive(ctxOf(), yes(spec)).asked, ['pickSpec', 'pickTarget', 'gate', 'start']);
});

test('startSteps: a cancelled pick ends with nothing started (spec, target, or the start gate)', () => {
  const spec = specFile(QLORA);
  const cancelAt =
    (kind: StartStep['kind'], answer: StartAnswers): Answer =>
    (step) =>
      step.kind === kind ? answer : yes(spec)(step);
  for (const [kind, answer] of [
    ['pickSpec', { spec: null }],
    ['pickTarget', { target: null }],
    ['gate', { gate: null }],
  ] as const) {
    const { asked, last } = drive(ctxOf(), cancelAt(kind, answer));
    assert.equal(last.kind, 'end', `${kind}: ${asked.join(' → ')}`);
    assert.equal(asked.indexOf(kind), asked.length - 2, `${kind} is the last question: ${asked.join(' → ')}`);
    assert.ok(!asked.includes('start') && !asked.includes('cloudKey'), `${kind}: ${asked.join(' → ')}`);
  }
});

const provider = { kind: 'lambda', canStop: false } as unknown as Provider;
const offer: Offer = {
  provider: 'lambda',
  instanceType: 'gpu_1x_a100',
  gpu: 'A100-40GB',
  gpuCount: 1,
  vramGiB: 40,
  region: 'us-east-1',
  pricePerHour: 1.29,
  spot: false,
  capacity: 'available',
};

test('startSteps: an own host skips the cost gate (no price, no billed resources, no cloud key); a cloud offer has all three', () => {
  const spec = specFile(QLORA);
  const own = drive(ctxOf(), yes(spec));
  assert.deepEqual(own.asked, ['pickSpec', 'pickTarget', 'gate', 'start'], JSON.stringify(own.last).slice(0, 300));
  const ownGate = own.steps.find((s) => s.kind === 'gate');
  assert.ok(ownGate?.kind === 'gate');
  const ownText = startConfirmation(ownGate.ready, runEnv({ stored: {}, spec: ownGate.ready.runSpec, mlflowTrackingUri: '', approved: () => true }), undefined);
  assert.equal(ownText.title, 'Start steps-qlora on gpu-box?');
  assert.doesNotMatch(ownText.detail, /\$\d|billed|Teardown:/i);
  assert.match(ownText.detail, /Your own host: no cloud charges/);

  const cloud = drive(ctxOf(), yes(spec, { target: { kind: 'cloud', provider, offer } }));
  assert.deepEqual(cloud.asked, ['pickSpec', 'pickTarget', 'gate', 'cloudKey', 'start']);
  const gate = cloud.steps.find((s) => s.kind === 'gate');
  assert.ok(gate?.kind === 'gate');
  const text = startConfirmation(gate.ready, runEnv({ stored: {}, spec: gate.ready.runSpec, mlflowTrackingUri: '', approved: () => true }), undefined);
  assert.equal(text.title, 'Start steps-qlora on a new lambda gpu_1x_a100?');
  assert.match(text.detail, /\$1\.29\/h/);
  assert.match(text.detail, /Teardown: terminate\./);
  const last = cloud.last;
  assert.ok(last.kind === 'start' && last.request.target.kind === 'cloud');
  assert.equal(last.request.target.identityFile, '/k/cloud_ed25519');
});

test("startSteps: Run Again's GPU and host: no pickers, the spec checked for that GPU, straight to the gate", () => {
  const spec = specFile(QLORA);
  const { asked, last } = drive(ctxOf({ again: { gpu: 'T4', host: 'suite-t4' } }), yes(spec));
  assert.deepEqual(asked, ['pickSpec', 'gate', 'start']);
  assert.ok(last.kind === 'start');
  assert.equal(last.request.gpu, 'T4');
  assert.deepEqual(last.request.target, { kind: 'ssh', host: 'suite-t4' });
});
