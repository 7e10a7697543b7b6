// The ZeRO model-states accounting against DeepSpeed's own estimators (test/support/deepSpeedOracle.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fullModelStates, largestLayerParams } from '../../../src/core/gpu/sharding';
import type { Sharding } from '../../../src/core/gpu/sharding';
import { lookupModel } from '../../../src/core/gpu/models';
import { runDeepSpeed } from '../../support/deepSpeedOracle';
import type { OracleCase as Case } from '../../support/deepSpeedOracle';

const sharding = (c: Case, stage: 2 | 3, offloadOptimizer: boolean, offloadParams: boolean, zeroInit: boolean): Sharding => ({
  engine: 'deepspeed',
  stage,
  offloadOptimizer,
  offloadParams,
  gpusPerNode: c.gpus_per_node,
  nodes: c.nodes,
  withinNode: false,
  zeroInit,
  source: 'test',
});

// Python 3.11 formats a str-mixin Enum member with its class name (f'{OffloadDeviceEnum.cpu:4}' gives
// "OffloadDeviceEnum.cpu"), which DeepSpeed's table inherits; the device is the part after the dot.
const option = (v: string): string => v.replace(/^OffloadDeviceEnum\./, '').trim();

/** Our rows in the layout of DeepSpeed's table: per CPU GB, per GPU GB, then the options as key=value tokens. */
function ourRows(c: Case, stage: 2 | 3): string[][] {
  const gb = (b: number): string => (b / 2 ** 30).toFixed(2) + 'GB';
  const rows: string[][] = [];
  const row = (s: Sharding, opts: string[]): void => {
    const m = fullModelStates(c.params, c.largest_layer, s);
    rows.push([gb(m.cpuBytes), gb(m.gpuBytes), ...opts]);
  };
  if (stage === 2) {
    for (const off of [true, false]) row(sharding(c, 2, off, false, true), [`offload_optimizer=${off ? 'cpu' : 'none'}`]);
    return rows;
  }
  for (const off of [true, false])
    for (const offP of [true, false]) {
      if (!off && offP) continue;
      for (const zi of [true, false])
        row(sharding(c, 3, off, offP, zi), [`offload_param=${offP ? 'cpu' : 'none'}`, `offload_optimizer=${off ? 'cpu' : 'none'}`, `zero_init=${zi ? 1 : 0}`]);
    }
  return rows;
}

function theirRows(table: string): string[][] {
  return table
    .split('\n')
    .filter((l) => /^\s*[\d.]+GB \|/.test(l))
    .map((l) => {
      const [cpu, gpu, opts] = l.split('|').map((x) => x.trim());
      return [cpu!, gpu!, ...opts!.split(',').map((o) => o.split('=').map(option).join('='))];
    });
}

test("sharding: ZeRO-2/3 model states per GPU and per node equal DeepSpeed's estimate_zero*_model_states_mem_needs over 1B-70B × 1/2/4/8 GPUs × 1/2 nodes × offload", () => {
  const models = ['TinyLlama/TinyLlama-1.1B', 'meta-llama/Llama-2-7b-hf', 'meta-llama/Llama-2-13b-hf', 'huggyllama/llama-30b', 'meta-llama/Llama-3.1-70B'];
  const cases: Case[] = [];
  for (const id of models) {
    const m = lookupModel(id)!;
    for (const gpn of [1, 2, 4, 8])
      for (const nodes of [1, 2]) cases.push({ params: m.params, largest_layer: largestLayerParams(m, 'deepspeed'), gpus_per_node: gpn, nodes });
  }
  const { version, results } = runDeepSpeed(cases);
  assert.equal(version, '0.19.8');
  assert.equal(results.length, cases.length);
  let rows = 0;
  let maxRel = 0;
  for (const r of results) {
    const c = r.case;
    const label = `${(c.params / 1e9).toFixed(1)}B on ${c.gpus_per_node} GPU(s) × ${c.nodes} node(s)`;
    // The printed tables, token for token (GB to the two decimals DeepSpeed prints).
    assert.deepEqual(ourRows(c, 2), theirRows(r.zero2), `ZeRO-2 table, ${label}`);
    assert.deepEqual(ourRows(c, 3), theirRows(r.zero3), `ZeRO-3 table, ${label}`);
    // The bytes behind them. Tolerance: 1e-9 relative, room for floating-point order only; the terms are the same.
    for (const e of r.exact) {
      const ours = fullModelStates(c.params, c.largest_layer, sharding(c, e.stage, e.offload_optimizer, e.offload_param, e.zero_init));
      const what = `ZeRO-${e.stage} offload_optimizer=${e.offload_optimizer} offload_param=${e.offload_param} zero_init=${e.zero_init}, ${label}`;
      for (const [o, t, k] of [
        [ours.gpuBytes, e.gpu, 'per GPU'],
        [ours.cpuBytes, e.cpu, 'per CPU'],
      ] as const) {
        const rel = Math.abs(o - t) / Math.max(1, t);
        maxRel = Math.max(maxRel, rel);
        assert.ok(rel <= 1e-9, `${what} ${k}: ours ${o} B, DeepSpeed ${t} B`);
      }
      // The parts the estimate shows add up to the same per-GPU total.
      const sum = ours.parts.reduce((s, p) => s + p.bytes, 0);
      assert.ok(Math.abs(sum - ours.gpuBytes) <= 1, `${what}: parts ${sum} B, total ${ours.gpuBytes} B`);
      rows++;
    }
  }
  assert.equal(rows, cases.length * 8);
  console.log(`${rows} rows against DeepSpeed ${version}: max relative error ${maxRel.toExponential(2)}`);
});
