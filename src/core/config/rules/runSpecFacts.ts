// What the run-spec rules read, worked out once per check: the effective method, the launch's world size, the
// files the spec refers to (each read once, bounded) and the memory estimate (made when a rule first asks).
import type { DocNode } from '../ast';
import { nodeAt, scalarAt } from '../ast';
import type { FileRead } from '../boundedRead';
import type { FileAccess } from '../types';
import type { RuleContext } from './crossChecks';
import { preferenceBase } from '../preferenceMethod';
import { parseConfigText } from '../parse';
import { isRunnerProfile } from '../launcherSharding';
import { dirName, join } from '../../pathText';
import { estimateRunSpec } from '../runSpecEstimate';
import type { RunSpecEstimate } from '../runSpecEstimate';
import { finiteNumber } from './ruleTable';

export interface RunSpecRuleInput extends RuleContext {
  readonly fileName: string;
  readonly files: FileAccess | undefined;
}

/** A file the spec names (launcher.config_file, launcher.deepspeed, env_file, model.config_path) and its read. */
export interface SpecReference {
  readonly path: readonly string[];
  readonly node: DocNode & { readonly value: string };
  readonly severity: 'error' | 'warning';
  readonly got: FileRead;
}

export interface RunSpecFacts extends RunSpecRuleInput {
  readonly hasCommand: boolean;
  /** dpo/orpo load their base as preference.base_method says: the 4-bit rules are that method's. */
  readonly method: ReturnType<typeof scalarAt>;
  readonly gpuCount: number;
  readonly machines: number;
  /** GPUs × machines: the processes one run starts. */
  readonly world: number;
  readonly launcherType: ReturnType<typeof scalarAt>;
  readonly references: readonly SpecReference[];
  /** The referenced YAML/JSON files, parsed (undefined when over 1 MB), by their key (`launcher.deepspeed`). */
  readonly loaded: ReadonlyMap<string, DocNode | undefined>;
  readonly estimate: () => RunSpecEstimate | undefined;
}

const REFERENCES: ReadonlyArray<[string[], 'yaml' | 'json' | 'text', 'error' | 'warning']> = [
  [['launcher', 'config_file'], 'yaml', 'error'],
  [['launcher', 'deepspeed'], 'json', 'error'],
  [['env_file'], 'text', 'warning'],
  [['model', 'config_path'], 'json', 'error'],
];

export function runSpecFacts(inp: RunSpecRuleInput): RunSpecFacts {
  const root = inp.root;
  const gpuCount = finiteNumber(scalarAt(root, ['target', 'gpu_count'])) ?? 1;
  const machines = finiteNumber(scalarAt(root, ['launcher', 'num_machines'])) ?? 1;
  const { references, loaded } = readReferences(inp);
  let estimate: { value: RunSpecEstimate | undefined } | undefined;
  return {
    ...inp,
    hasCommand: nodeAt(root, ['command']) !== undefined,
    method: preferenceBase(scalarAt(root, ['method']), scalarAt(root, ['preference', 'base_method'])) ?? scalarAt(root, ['method']),
    gpuCount,
    machines,
    world: gpuCount * machines,
    launcherType: scalarAt(root, ['launcher', 'type']) ?? 'python',
    references,
    loaded,
    estimate: () => (estimate ??= { value: estimateRunSpec(root, inp.fileName, inp.files) }).value,
  };
}

function readReferences(inp: RunSpecRuleInput): { references: SpecReference[]; loaded: Map<string, DocNode | undefined> } {
  const references: SpecReference[] = [];
  const loaded = new Map<string, DocNode | undefined>();
  for (const [path, syntax, severity] of REFERENCES) {
    const n = nodeAt(inp.root, path);
    if (n?.kind !== 'scalar' || typeof n.value !== 'string' || !inp.files) continue;
    if (path[1] === 'config_file' && isRunnerProfile(n.value)) continue; // the runner's own accelerate profile, not a file here
    // Read once, bounded: the path is the workspace's choice and may lead to a device, a FIFO or outside it.
    const got = inp.files.read(join(dirName(inp.fileName), n.value));
    references.push({ path, node: n as DocNode & { readonly value: string }, severity, got });
    if ('text' in got && syntax !== 'text') loaded.set(path.join('.'), got.text.length > 1_000_000 ? undefined : parseConfigText(got.text, syntax).root);
  }
  return { references, loaded };
}
