import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { main } from '../../../src/cli/main';
import type { CliIo } from '../../../src/cli/command';

const root = resolve(__dirname, '../../..');
function capture(): { io: CliIo; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { stdout: (t) => out.push(t), stderr: (t) => err.push(t), cwd: root }, out, err };
}

test('cli validate: JSON contract, 1-based positions, exit 1 on errors', async () => {
  const c = capture();
  assert.equal(await main(['validate', 'test/fixtures/config/planted/accelerate_single.yaml', '--format', 'json'], c.io), 1);
  const ds = JSON.parse(c.out.join('')) as Array<Record<string, unknown>>;
  assert.deepEqual(ds[0], {
    file: 'test/fixtures/config/planted/accelerate_single.yaml',
    line: 3,
    column: 18,
    endLine: 3,
    endColumn: 22,
    severity: 'error',
    code: 'RFT204',
    message: ds[0]!.message,
  });
  for (const d of ds) assert.deepEqual(Object.keys(d), ['file', 'line', 'column', 'endLine', 'endColumn', 'severity', 'code', 'message']);
});

test('cli validate: the examples validate clean (exit 0, empty array); bad usage exits 2', async () => {
  const c = capture();
  assert.equal(await main(['validate', 'examples', '--format=json'], c.io), 0);
  assert.equal(c.out.join('').trim(), '[]');
  assert.equal(await main(['validate'], capture().io), 2);
  assert.equal(await main(['validate', 'examples', '--format', 'xml'], capture().io), 2);
  assert.equal(await main(['validate', 'examples', '--gpu', 'TPUv5'], capture().io), 2);
  assert.equal(await main(['validate', 'no/such/file.yaml'], capture().io), 2);
});

test('cli validate --gpu T4 turns the A100 bf16 profile into an error; text format is file:line:col', async () => {
  const c = capture();
  assert.equal(await main(['validate', 'examples/accelerate_configs/single_gpu.yaml', '--gpu', 'T4'], c.io), 1);
  assert.match(c.out.join(''), /^examples\/accelerate_configs\/single_gpu\.yaml:7:18: error RFT801: /);
});

test('cli estimate: prints the label and exits 0 when it fits, 1 when not', async () => {
  const c = capture();
  assert.equal(await main(['estimate', 'examples/t4-qlora/finetune.yaml', '--gpu', 'T4'], c.io), 0);
  assert.match(c.out.join(''), /≈ \d+\.\d GB of 16 GB on T4/);
  const j = capture();
  assert.equal(await main(['estimate', 'examples/deepspeed-zero2-multi/finetune.yaml', '--gpu', 'T4', '--format', 'json'], j.io), 1);
  const r = JSON.parse(j.out.join('')) as { fits: boolean; advice: unknown[] };
  assert.equal(r.fits, false);
  assert.ok(r.advice.length > 0);
});
