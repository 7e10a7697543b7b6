import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { linkOutputsScript, volumeEnv, volumeOf } from '../../../src/core/runs/hosts/runVolume';
import { runSpecSchema } from '../../../src/core/config/schemas/runSpec';
import { typedSpec } from '../../support/typedSpec';

test('target.volume is read from the spec and validated by the schema', () => {
  assert.deepEqual(volumeOf(typedSpec({ target: { provider: 'ec2', volume: { name: 'seed004', size_gb: 200 } } })), { name: 'seed004', sizeGiB: 200 });
  assert.equal(volumeOf(typedSpec({ target: { provider: 'ec2' } })), undefined);
  const base = { version: 1, name: 'v', command: 'python train.py', target: { provider: 'ec2', gpu: 'T4' } };
  assert.ok(runSpecSchema.safeParse({ ...base, target: { ...base.target, volume: { name: 'data-1', size_gb: 100 } } }).success);
  assert.ok(!runSpecSchema.safeParse({ ...base, target: { ...base.target, volume: { name: '../x', size_gb: 100 } } }).success);
  assert.ok(!runSpecSchema.safeParse({ ...base, target: { ...base.target, volume: { name: 'x', size_gb: 0 } } }).success);
});

test('the volume holds staged data and the Hugging Face cache unless the .env says otherwise', () => {
  assert.deepEqual(volumeEnv({}), { RFT_DATA_DIR: '/mnt/rft-volume/data', HF_HOME: '/mnt/rft-volume/huggingface' });
  assert.deepEqual(volumeEnv({ HF_HOME: '/data/hf' }), { RFT_DATA_DIR: '/mnt/rft-volume/data' });
});

test('the outputs folder becomes a link onto the volume, and an existing one is left alone (run in sh)', () => {
  const d = mkdtempSync(join(tmpdir(), 'rft-vol-'));
  const mount = join(d, 'mnt');
  const ws = join(d, 'ws');
  mkdirSync(ws);
  execFileSync('sh', ['-c', linkOutputsScript(ws, 'proj-1234', 'outputs', mount)]);
  assert.equal(readlinkSync(join(ws, 'outputs')), join(mount, 'outputs', 'proj-1234'));
  assert.ok(existsSync(join(mount, 'data')) && existsSync(join(mount, 'huggingface')));
  writeFileSync(join(ws, 'outputs', 'adapter.bin'), 'x');
  assert.ok(existsSync(join(mount, 'outputs', 'proj-1234', 'adapter.bin')), 'written through the link onto the volume');
  execFileSync('sh', ['-c', linkOutputsScript(ws, 'proj-1234', 'outputs', mount)]);
  const ws2 = join(d, 'ws2');
  mkdirSync(join(ws2, 'outputs'), { recursive: true });
  execFileSync('sh', ['-c', linkOutputsScript(ws2, 'other', '../../etc', mount)]);
  assert.ok(existsSync(join(ws2, 'outputs')), 'an odd outputs.dir falls back to outputs, an existing folder stays');
});
