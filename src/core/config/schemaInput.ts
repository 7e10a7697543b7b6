// The plain value the schema checks, read the way the tool that loads the file reads it. toValue
// gives what a YAML 1.2 reader sees; the tools these configs are written for read some things
// differently (empty values, 500_000, JSON comment keys), real configs rely on that, and checking
// the 1.2 reading instead reports errors the tool never raises.
import type { DocNode } from './ast';
import type { ConfigKind } from './types';

/**
 * Kinds loaded into a dataclass or pydantic model (accelerate's ClusterConfig, HfArgumentParser,
 * Axolotl's and LLaMA-Factory's models), where an empty value (`key:` or `key: null`) is None, i.e.
 * "use the default": `accelerate config` itself writes `main_process_ip: null`, LLaMA-Factory's
 * examples ship `resume_from_checkpoint: null`, Axolotl's `adapter:` and `lora_r:` left blank.
 */
const NULL_IS_DEFAULT: ReadonlySet<ConfigKind> = new Set(['accelerate', 'trainer', 'axolotl', 'llamafactory']);

/** Kinds read with PyYAML (YAML 1.1), where `500_000` is the integer 500000, not a string. */
const PYYAML_KINDS: ReadonlySet<ConfigKind> = new Set(['accelerate', 'trainer', 'axolotl', 'llamafactory', 'sweep']);

// YAML 1.1 integers and floats with digit-group underscores (PyYAML's resolver accepts them).
const YAML11_UNDERSCORE_NUMBER = /^[-+]?[0-9][0-9_]*(\.[0-9_]*)?([eE][-+][0-9]+)?$/;

/**
 * `${VAR}`/`${oc.env:VAR}`: filled in before the tool reads the file (envsubst in launch templates
 * such as Axolotl's .runpod config, OmegaConf interpolation in LLaMA-Factory v1), so the written
 * value says nothing about the final one: schema problems reported at such a value are dropped.
 */
const INTERPOLATION = /^\$\{[^{}\s]+\}$/;

export function isInterpolation(n: DocNode): boolean {
  return n.kind === 'scalar' && typeof n.value === 'string' && INTERPOLATION.test(n.value);
}

export function schemaInput(root: DocNode, kind: ConfigKind, syntax: 'yaml' | 'json'): unknown {
  const dropUnset = NULL_IS_DEFAULT.has(kind);
  const yaml11 = syntax === 'yaml' && PYYAML_KINDS.has(kind);
  // JSON has no comments, so DeepSpeed configs carry them as top-level "_comment" keys; DeepSpeed
  // ignores unknown top-level keys (not inside zero_optimization, whose model forbids extras).
  const commentKey = (depth: number, key: string): boolean => kind === 'deepspeed' && depth === 0 && key.startsWith('_');
  const convert = (n: DocNode | undefined, depth: number): unknown => {
    if (!n) return null;
    if (n.kind === 'scalar') {
      if (yaml11 && !n.quoted && typeof n.value === 'string' && n.value.includes('_') && YAML11_UNDERSCORE_NUMBER.test(n.value)) {
        const num = Number(n.value.replace(/_/g, ''));
        if (Number.isFinite(num)) return num;
      }
      return n.value;
    }
    if (n.kind === 'seq') return n.items.map((it) => convert(it, depth + 1));
    const o: Record<string, unknown> = {};
    for (const p of n.pairs) {
      const key = String(p.key.value);
      if ((dropUnset && isUnset(p.value)) || commentKey(depth, key)) continue;
      o[key] = convert(p.value, depth + 1);
    }
    return o;
  };
  return convert(root, 0);
}

function isUnset(n: DocNode | undefined): boolean {
  return !n || (n.kind === 'scalar' && n.value === null);
}
