// Issue 38.1: one typed run spec. The defaults are written once (core/config/runSpecDefaults.ts), accepted by the
// schema, generated into the runner's spec_defaults.py, and filled in the same way on both sides; the plan reads the
// spec through its type, from the one parse the checks made.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_SPEC_DEFAULTS, normaliseRunSpec } from '../../../src/core/config/runSpecDefaults';
import type { RunSpec } from '../../../src/core/config/runSpecDefaults';
import { renderSpecDefaultsPython } from '../../../src/core/config/specDefaultsPython';
import { runSpecSchema } from '../../../src/core/config/schemas/runSpec';
import { describe, schemaAt } from '../../../src/core/config/zodWalk';
import { validateText } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { fitOn, planRun } from '../../../src/core/runs/lifecycle/runPlan';

const ROOT = join(__dirname, '../../..');
const GENERATED = join(ROOT, 'python-runner/remote_finetune/spec_defaults.py');

test('spec defaults: the checked-in python-runner/remote_finetune/spec_defaults.py is what scripts/gen-spec-defaults.ts writes', () => {
  assert.equal(
    readFileSync(GENERATED, 'utf8'),
    renderSpecDefaultsPython(),
    'spec_defaults.py is stale: run `node --import tsx scripts/gen-spec-defaults.ts` and commit the result',
  );
});

function leaves(o: unknown, path: string[] = []): Array<[string[], unknown]> {
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return [[path, o]];
  const entries = Object.entries(o);
  return entries.length === 0 ? [[path, o]] : entries.flatMap(([k, v]) => leaves(v, [...path, k]));
}

test('spec defaults: every default names a field of the run-spec schema and is a value that field accepts', () => {
  for (const [path, value] of leaves(RUN_SPEC_DEFAULTS)) {
    const field = schemaAt(runSpecSchema, path);
    assert.ok(field, `${path.join('.')}: not a field of the run-spec schema`);
    // `wandb: {}`: a section with no field defaults of its own (the section is the default: reporting on).
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) continue;
    const r = field.safeParse(value);
    assert.ok(r.success, `${path.join('.')}: the schema refuses the default ${JSON.stringify(value)}`);
  }
});

test('spec defaults: teardown.policy defaults to terminate on both sides, and the schema says so and why', () => {
  assert.equal(RUN_SPEC_DEFAULTS.teardown.policy, 'terminate');
  assert.match(readFileSync(GENERATED, 'utf8'), /"policy": "terminate"/);
  const text = describe(schemaAt(runSpecSchema, ['teardown', 'policy'])) ?? '';
  assert.match(text, /terminate \(the default/);
  assert.match(text, /nothing is billed by accident/);
  const dir = mkdtempSync(join(tmpdir(), 'rft-spec-defaults-'));
  const spec = 'version: 1\nmodel:\n  id: meta-llama/Llama-3.2-1B\ndata:\n  train: data.jsonl\ntarget:\n  provider: ec2\n  gpu: A10G\n  region: us-east-1\n';
  writeFileSync(join(dir, 'finetune.yaml'), spec);
  writeFileSync(join(dir, 'data.jsonl'), '{"text":"x"}\n');
  const plan = planRun(join(dir, 'finetune.yaml'), spec, nodeFiles);
  assert.deepEqual(plan.teardown, { policy: 'terminate', idleMinutes: 30 });
});

function pythonNormalise(spec: RunSpec): unknown {
  const py =
    'import json, sys\nsys.path.insert(0, "python-runner")\nfrom remote_finetune.spec import normalise\nprint(json.dumps(normalise(json.loads(sys.argv[1]))))';
  const r = spawnSync('python3', ['-c', py, JSON.stringify(spec)], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(r.status, 0, `python3 could not ask the runner: ${r.error?.message ?? r.stderr}`);
  return JSON.parse(r.stdout);
}

test("spec defaults: normaliseRunSpec fills a spec in exactly as the runner's spec.normalise does on the host", () => {
  const specs: RunSpec[] = [
    { version: 1, model: { id: 'm/x' }, data: { train: 't.jsonl' }, target: { provider: 'ssh', host: 'gpu', gpu: 'T4' } },
    {
      version: 1,
      name: 'evals',
      model: { id: 'm/x', revision: 'v2' },
      method: 'lora-bf16',
      data: { train: 't.jsonl', eval: 'e.jsonl' },
      trainer: { epochs: 1, precision: 'fp16' },
      lora: { r: 8, target_modules: ['q_proj', 'v_proj'] },
      target: { provider: 'ec2', gpu: 'A10G', gpu_count: 4 },
      teardown: { policy: 'keep' },
      outputs: { download: ['adapter', 'logs'] },
    },
    {
      version: 1,
      command: 'python train.py',
      target: { provider: 'lambda', gpu: 'H100' },
      trainer: { eval_strategy: 'no' },
      data: { train: 'x', eval_ratio: 0.1 },
    },
  ];
  for (const s of specs) assert.deepEqual(normaliseRunSpec(s), pythonNormalise(s), JSON.stringify(s));
  const bare = normaliseRunSpec(specs[0]!);
  assert.equal(bare.trainer.learning_rate, 2e-4);
  assert.equal(bare.teardown.policy, 'terminate');
  assert.equal(normaliseRunSpec(specs[1]!).trainer.eval_strategy, 'steps', 'an eval set turns evaluation on');
});

test('spec defaults: the plan reads the spec the checks parsed, typed and defaulted, and the fit reuses that parse', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-spec-typed-'));
  // An unknown trainer key is a warning only: the run may start, so the typed spec must stand with it.
  const spec =
    'version: 1\nname: typed\nmodel:\n  id: meta-llama/Llama-3.2-1B\ndata:\n  train: data.jsonl\ntrainer:\n  neftune_noise_alpha: 5\n  epochs: 1\nenv_file: .env\ncommand: python train.py\ntarget:\n  provider: ssh\n  host: gpu\n  gpu: A100-80GB\nteardown:\n  policy: stop\n  idle_minutes: 45\n';
  writeFileSync(join(dir, 'finetune.yaml'), spec);
  writeFileSync(join(dir, 'data.jsonl'), '{"text":"x"}\n');
  writeFileSync(join(dir, '.env'), 'A=1\n');
  const r = validateText(spec, { fileName: join(dir, 'finetune.yaml'), kind: 'runspec', files: nodeFiles });
  assert.deepEqual(
    r.diagnostics.filter((d) => d.severity === 'error'),
    [],
  );
  assert.equal(r.runSpec?.name, 'typed');
  assert.equal(r.runSpec?.trainer?.epochs, 1);
  const plan = planRun(join(dir, 'finetune.yaml'), spec, nodeFiles);
  assert.equal(plan.name, 'typed');
  assert.equal(plan.ownScript, true);
  assert.equal(plan.envFile, join(dir, '.env'));
  assert.deepEqual(plan.teardown, { policy: 'stop', idleMinutes: 45 });
  assert.equal(plan.target.host, 'gpu');
  assert.equal(plan.runSpec?.trainer.per_device_batch_size, 1, 'unset fields carry their defaults');
  assert.equal(plan.runSpec?.trainer.epochs, 1);
  assert.ok(plan.root, 'the plan keeps the parsed document');
  // The fit is estimated from the plan's parse: a plan whose text no longer parses still gets its fit.
  const fits = fitOn({ ...plan, specText: '{{{' }, ['A100-80GB'], nodeFiles);
  assert.match(fits[0]!.label, /on A100-80GB/);
});

test('spec defaults: a spec the schema refuses has no typed spec, and its plan carries the errors', () => {
  const spec = 'version: 1\nmodel:\n  id: m/x\ntrainer:\n  epochs: many\ntarget:\n  provider: ssh\n  host: gpu\n  gpu: T4\n';
  const r = validateText(spec, { fileName: '/tmp/finetune.yaml', kind: 'runspec' });
  assert.equal(r.runSpec, undefined);
  const plan = planRun('/tmp/finetune.yaml', spec, nodeFiles);
  assert.equal(plan.runSpec, undefined);
  assert.ok(plan.errors.length > 0);
});
