// python-runner/remote_finetune/spec_defaults.py, written from the run-spec zod schema and RUN_SPEC_DEFAULTS
// (scripts/gen-spec-defaults.ts): the runner's defaults and a typed, read-only view of spec.json with one class per
// section, so the host reads `RunSpec(spec).trainer.precision` where it used to repeat the default at each read.
// test/unit/config/specDefaults.test.ts fails when the checked-in module differs from what this renders.
import type { z } from 'zod';
import { runSpecSchema } from './schemas/runSpec';
import { RUN_SPEC_DEFAULTS } from './runSpecDefaults';
import { unwrap } from './zodWalk';

interface Def {
  readonly type: string;
  readonly shape?: Record<string, z.ZodType>;
  readonly options?: readonly z.ZodType[];
  readonly element?: z.ZodType;
  readonly values?: readonly unknown[];
}

function defOf(s: z.ZodType): Def {
  return (s as unknown as { _zod: { def: Def } })._zod.def;
}

function isInt(s: z.ZodType): boolean {
  return (s as unknown as { isInt?: boolean }).isInt === true;
}

/** The Python annotation of a field's values. */
function pyType(field: z.ZodType): string {
  const s = unwrap(field);
  const d = defOf(s);
  switch (d.type) {
    case 'string':
    case 'enum':
      return 'str';
    case 'boolean':
      return 'bool';
    case 'number':
      return isInt(s) ? 'int' : 'float';
    case 'literal': {
      const v = d.values?.[0];
      return typeof v === 'string' ? 'str' : typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'float') : 'Any';
    }
    case 'array':
      return d.element ? `List[${pyType(d.element)}]` : 'List[Any]';
    case 'union': {
      const parts = [...new Set((d.options ?? []).map(pyType))];
      return parts.length === 1 ? parts[0]! : `Union[${parts.join(', ')}]`;
    }
    case 'object':
    case 'record':
      return 'Dict[str, Any]';
    default:
      return 'Any';
  }
}

/** A JSON value as a Python literal (numbers as JSON writes them: 32, not 32.0, as json.load read the old file). */
function pyLiteral(v: unknown, indent: string): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number' || typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((x) => pyLiteral(x, indent)).join(', ')}]`;
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  const inner = `${indent}    `;
  return `{\n${entries.map(([k, x]) => `${inner}${JSON.stringify(k)}: ${pyLiteral(x, inner)},`).join('\n')}\n${indent}}`;
}

const PY_KEYWORDS = new Set([
  'and',
  'as',
  'assert',
  'class',
  'def',
  'del',
  'elif',
  'else',
  'except',
  'finally',
  'for',
  'from',
  'global',
  'if',
  'import',
  'in',
  'is',
  'lambda',
  'not',
  'or',
  'pass',
  'raise',
  'return',
  'try',
  'while',
  'with',
  'yield',
]);

function className(section: string): string {
  return section.replace(/(^|_)([a-z])/g, (_m, _u: string, c: string) => c.toUpperCase());
}

function attr(name: string): string {
  return PY_KEYWORDS.has(name) ? `${name}_` : name;
}

function property(name: string, type: string, body: string): string[] {
  return ['    @property', `    def ${attr(name)}(self) -> ${type}:`, `        return ${body}`, ''];
}

function fieldType(field: z.ZodType, hasDefault: boolean): string {
  const t = pyType(field);
  return hasDefault || t === 'Any' ? t : `Optional[${t}]`;
}

/** The text of spec_defaults.py. */
export function renderSpecDefaultsPython(): string {
  const shape = defOf(runSpecSchema).shape ?? {};
  const defaults = RUN_SPEC_DEFAULTS as Readonly<Record<string, unknown>>;
  const out: string[] = [
    '"""The run spec\'s defaults and a typed view of spec.json. GENERATED: do not edit.',
    '',
    "Written by scripts/gen-spec-defaults.ts (`node --import tsx scripts/gen-spec-defaults.ts`) from the extension's",
    'run-spec schema (src/core/config/schemas/runSpec.ts) and its defaults (src/core/config/runSpecDefaults.ts), so the',
    'host trains with the values the editor checked and estimated. test/unit/config/specDefaults.test.ts fails when this',
    'file is stale; tests/test_spec_defaults.py when the runner reads other defaults.',
    '"""',
    '',
    'import copy',
    'from typing import Any, Dict, List, Optional, Union',
    '',
    '# What a run spec leaves unset (absent or null) means on the host; spec.normalise merges it under the spec.',
    `DEFAULTS: Dict[str, Any] = ${pyLiteral(defaults, '')}`,
    '',
    '',
    'class Section:',
    '    """One mapping of spec.json read by attribute: a field left unset (absent or null) reads as its default.',
    '',
    '    Values are the spec\'s own, unchecked beyond what spec.check_spec and the extension\'s schema did."""',
    '',
    '    _section = ""',
    '',
    '    def __init__(self, raw: Any) -> None:',
    '        self._raw: Dict[str, Any] = raw if isinstance(raw, dict) else {}',
    '',
    '    def _get(self, key: str) -> Any:',
    '        value = self._raw.get(key)',
    '        if value is not None:',
    '            return value',
    '        defaults = DEFAULTS.get(self._section) if self._section else DEFAULTS',
    '        return copy.deepcopy(defaults.get(key)) if isinstance(defaults, dict) else None',
    '',
    '    def raw(self) -> Dict[str, Any]:',
    '        """The mapping as written (defaults not filled in)."""',
    '        return self._raw',
    '',
  ];
  const top: string[] = ['', 'class RunSpec(Section):', '    """spec.json, section by section (see Section)."""', ''];
  for (const [key, field] of Object.entries(shape)) {
    const d = defOf(unwrap(field));
    if (d.type === 'object' && d.shape) {
      const cls = className(key);
      const sectionDefaults = (defaults[key] ?? {}) as Readonly<Record<string, unknown>>;
      out.push('', `class ${cls}(Section):`, `    _section = ${JSON.stringify(key)}`, '');
      for (const [name, f] of Object.entries(d.shape)) out.push(...property(name, fieldType(f, name in sectionDefaults), `self._get(${JSON.stringify(name)})`));
      top.push(...property(key, cls, `${cls}(self._raw.get(${JSON.stringify(key)}))`));
    } else {
      top.push(...property(key, fieldType(field, key in defaults), `self._get(${JSON.stringify(key)})`));
    }
  }
  return `${[...out, ...top].join('\n').replace(/\n+$/, '')}\n`;
}
