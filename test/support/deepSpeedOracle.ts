// DeepSpeed's own model-states estimators as an oracle: the real package (CPU only) in a venv that
// scripts/ensure-deepspeed-venv.sh builds once into a cache outside the clone. No venv is a failure, never a skip:
// without the oracle the tests that use it prove nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** The venv's python; fails the calling test with the reason when it cannot be built. */
export function deepSpeedPython(): string {
  const r = spawnSync('bash', [join(ROOT, 'scripts', 'ensure-deepspeed-venv.sh')], { encoding: 'utf8', timeout: 15 * 60_000 });
  if (r.status !== 0) assert.fail(`the DeepSpeed venv could not be built (exit ${r.status ?? r.signal}): ${r.stderr}`);
  return join(r.stdout.trim(), 'bin', 'python');
}

export interface OracleCase {
  readonly params: number;
  readonly largest_layer: number;
  readonly gpus_per_node: number;
  readonly nodes: number;
}
export interface OracleExact {
  readonly stage: 2 | 3;
  readonly offload_optimizer: boolean;
  readonly offload_param: boolean;
  readonly zero_init: boolean;
  readonly cpu: number;
  readonly gpu: number;
}
export interface OracleResult {
  readonly case: OracleCase;
  /** What estimate_zero2_model_states_mem_needs_all_cold printed. */
  readonly zero2: string;
  /** What estimate_zero3_model_states_mem_needs_all_cold printed. */
  readonly zero3: string;
  /** The byte counts behind those tables. */
  readonly exact: readonly OracleExact[];
}

export function runDeepSpeed(cases: readonly OracleCase[]): { version: string; results: OracleResult[] } {
  const r = spawnSync(deepSpeedPython(), [join(ROOT, 'test', 'support', 'deepspeed_estimators.py')], {
    input: JSON.stringify(cases),
    encoding: 'utf8',
    timeout: 300_000,
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) assert.fail(`DeepSpeed's estimators failed (exit ${r.status ?? r.signal}): ${r.stderr}`);
  const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as { deepspeed: string; results: OracleResult[] };
  return { version: j.deepspeed, results: j.results };
}
