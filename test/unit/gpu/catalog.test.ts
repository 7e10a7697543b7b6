import { test } from 'node:test';
import assert from 'node:assert/strict';
import { GPU_CATALOG, GPU_IDS, findGpu, gpusWithAtLeast } from '../../../src/core/gpu/catalog';
import { validateText } from '../../../src/core/config/validate';

test('catalog: bf16 / FlashAttention-2 / fp8 follow compute capability (T4, V100 have neither bf16 nor FA2)', () => {
  assert.deepEqual(
    GPU_IDS.filter((id) => !GPU_CATALOG[id].bf16),
    ['T4', 'V100'],
  );
  assert.deepEqual(
    GPU_IDS.filter((id) => !GPU_CATALOG[id].flashAttention2),
    ['T4', 'V100'],
  );
  assert.deepEqual(
    GPU_IDS.filter((id) => GPU_CATALOG[id].fp8),
    ['L4', 'RTX4090', 'H100', 'H200'],
  );
  assert.equal(GPU_CATALOG['A100-40GB'].vramGb, 40);
  assert.equal(GPU_CATALOG.H200.vramGb, 141);
});

test('catalog: the spellings people use resolve (GCP accelerator types, "Tesla T4", a100)', () => {
  assert.equal(findGpu('nvidia-tesla-t4')?.id, 'T4');
  assert.equal(findGpu('nvidia-l4')?.id, 'L4');
  assert.equal(findGpu('Tesla V100')?.id, 'V100');
  assert.equal(findGpu('a100')?.id, 'A100-40GB');
  assert.equal(findGpu('A100-80G')?.id, 'A100-80GB');
  assert.equal(findGpu('TPUv5'), undefined);
  assert.deepEqual(
    gpusWithAtLeast(70).map((g) => g.id),
    ['A100-80GB', 'H100', 'H200'],
  );
});

test('run spec: target.gpu written as a GCP accelerator type gets a fix to the catalog id', () => {
  const text = 'version: 1\ncommand: python train.py\ntarget:\n  provider: gcp\n  gpu: nvidia-tesla-t4\n';
  const d = validateText(text, { fileName: 'finetune.yaml' }).diagnostics.find((x) => x.code === 'RFT104')!;
  assert.match(d.message, /write T4/);
  assert.equal(d.fixes![0]!.edits[0]!.newText, 'T4');
});
