// Issue 39.1 (the confirmation part): after "Start Anyway" on a host without the asked GPU, the Start confirmation
// names what the host has ("CPU only", "1 × Tesla T4") beside the spec's ask, since its estimates are the spec's GPU's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { probedHardwareLine } from '../../../src/core/runs/view/hardwareLine';
import type { ProbeOutcome } from '../../../src/core/hosts/gpuCheck';

const nvidia = (...names: string[]): ProbeOutcome =>
  ({
    probe: {
      kind: 'nvidia',
      gpus: names.map((name, index) => ({ index, name, memoryMiB: 15360 })),
      count: names.length,
      driverVersion: '550',
      cudaVersion: '12.4',
    },
  }) as unknown as ProbeOutcome;

test('the confirmation line says what the host has when it is not what the spec asks for', () => {
  const none = { probe: { kind: 'none', reason: 'nvidia-smi is not installed' } } as unknown as ProbeOutcome;
  assert.equal(
    probedHardwareLine('box', none, ['A100-40GB']),
    'Hardware on box: CPU only (no NVIDIA GPU found). The spec asks for A100-40GB; the estimates above are for that.',
  );
  assert.equal(
    probedHardwareLine('box', nvidia('Tesla T4', 'Tesla T4'), ['A100-40GB']),
    'Hardware on box: 2 × Tesla T4. The spec asks for A100-40GB; the estimates above are for that.',
  );
  assert.equal(probedHardwareLine('box', nvidia('NVIDIA A100-SXM4-40GB'), ['A100-40GB']), undefined, 'the asked GPU needs no line');
  assert.equal(probedHardwareLine('box', { error: 'timed out' }, ['A100-40GB']), undefined, 'an unknown host claims nothing');
});
