// W&B sweep configuration (https://docs.wandb.ai/guides/sweeps/sweep-config-keys).
import { z } from 'zod';

// The distributions of wandb/sweeps' config schema (src/sweeps/config/schema.json).
export const DISTRIBUTIONS = ['constant', 'categorical', 'categorical_w_probabilities', 'int_uniform', 'uniform', 'q_uniform', 'log_uniform', 'log_uniform_values', 'q_log_uniform', 'q_log_uniform_values', 'inv_log_uniform', 'inv_log_uniform_values', 'normal', 'q_normal', 'log_normal', 'q_log_normal', 'beta', 'q_beta'] as const;


export interface SweepParameter {
  value?: unknown;
  values?: unknown[];
  distribution?: (typeof DISTRIBUTIONS)[number];
  min?: number;
  max?: number;
  mu?: number;
  sigma?: number;
  q?: number;
  a?: number;
  b?: number;
  probabilities?: number[];
  parameters?: Record<string, SweepParameter>;
}

export const sweepParameter: z.ZodType<SweepParameter> = z.lazy(() => z.strictObject({
  value: z.unknown().optional().describe('A constant value.'),
  values: z.array(z.unknown()).min(1).optional().describe('Discrete values to choose from (grid search needs these).'),
  distribution: z.enum(DISTRIBUTIONS).optional().describe('How values are drawn: uniform, int_uniform, log_uniform_values (min/max are the values), log_uniform (min/max are exponents), normal, categorical, …'),
  min: z.number().optional().describe('Lower bound (must be below max; > 0 for *_values log distributions).'),
  max: z.number().optional().describe('Upper bound (must be above min).'),
  mu: z.number().optional().describe('Mean of a normal distribution.'),
  sigma: z.number().positive().optional().describe('Standard deviation, > 0.'),
  q: z.number().positive().optional().describe('Quantization step for q_* distributions, > 0.'),
  a: z.number().min(0).optional().describe('Beta distribution alpha, ≥ 0.'),
  b: z.number().min(0).optional().describe('Beta distribution beta, ≥ 0.'),
  probabilities: z.array(z.number().min(0).max(1)).optional().describe('Probabilities of each of `values`; must sum to 1.'),
  parameters: z.record(z.string(), sweepParameter).optional().describe('Nested parameters.'),
}));

export const sweepSchema = z.strictObject({
  program: z.string().min(1).optional().describe('The training script the agent runs, e.g. scripts/train.py.'),
  // Required, except in a W&B Launch sweep whose `scheduler` job picks the method (kindRules.ts checks that).
  method: z.enum(['grid', 'random', 'bayes', 'custom']).optional().describe('Search method: grid (every combination of `values`), random, bayes (needs `metric`), or custom (a `scheduler` engine such as optuna).'),
  metric: z.strictObject({
    name: z.string().min(1).describe('Metric logged by the run, e.g. eval/loss.'),
    goal: z.enum(['minimize', 'maximize']).optional().describe('minimize or maximize.'),
    target: z.number().optional().describe('Stop the sweep when this value is reached.'),
    impute: z.enum(['latest', 'best', 'worst']).optional().describe('Value bayes search uses for runs that failed or were killed.'),
    impute_while_running: z.enum(['latest', 'best', 'worst', 'false']).optional().describe('Value used for runs still running.'),
  }).optional().describe('What the sweep optimises; required for bayes.'),
  parameters: z.record(z.string(), sweepParameter).describe('Hyperparameters to search; each has value, values or a distribution with bounds.'),
  early_terminate: z.strictObject({
    type: z.literal('hyperband').describe('Only hyperband is supported.'),
    min_iter: z.number().int().min(1).optional().describe('First bracket, in iterations.'),
    max_iter: z.number().int().min(1).optional().describe('Last bracket, in iterations.'),
    s: z.number().positive().optional().describe('Number of brackets.'),
    eta: z.number().gt(1).optional().describe('Bracket multiplier, > 1 (3 by default).'),
    strict: z.boolean().optional().describe('Prune more aggressively.'),
  }).optional().describe('Stop poor runs early (hyperband).'),
  command: z.array(z.union([z.string(), z.number(), z.boolean()])).optional().describe('Command line template, e.g. [${env}, ${interpreter}, ${program}, ${args}].'),
  name: z.string().optional().describe('Sweep name.'),
  description: z.string().optional().describe('Sweep description.'),
  project: z.string().optional().describe('W&B project.'),
  entity: z.string().optional().describe('W&B entity.'),
  run_cap: z.number().int().min(1).optional().describe('Stop after this many runs.'),
  // The rest of wandb/sweeps' schema.json: W&B Launch sweeps, custom schedulers, multi-objective.
  job: z.string().optional().describe('W&B Launch job to run instead of a program.'),
  image_uri: z.string().optional().describe('Container image W&B Launch runs instead of a job.'),
  scheduler: z.record(z.string(), z.unknown()).optional().describe('Sweep scheduler settings (W&B Launch: num_workers, job, resource; custom method: engine, source, …).'),
  controller: z.record(z.string(), z.unknown()).optional().describe('Controller: type local or cloud.'),
  metrics: z.array(z.record(z.string(), z.unknown())).optional().describe('Several metrics for multi-objective search (method custom).'),
  apiVersion: z.string().optional().describe('Config format version.'),
  kind: z.literal('sweep').optional().describe('Always sweep.'),
});

