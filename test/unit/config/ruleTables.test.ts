// The config checks are tables of small named rules (src/core/config/rules/ruleTable.ts). Every rule id is unique,
// every rule reports on at least one fixture (a rule nothing reaches is dead or untested), each folder under
// test/fixtures/config/rules/ makes the rule it is named after report, and no function in the rule files grows
// past 60 lines again (checkRunSpec was 226).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { validateBytes } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { traceRules } from '../../../src/core/config/rules/ruleTable';
import type { Rule } from '../../../src/core/config/rules/ruleTable';
import { RUN_SPEC_RULES } from '../../../src/core/config/rules/runSpecRules';
import { TRAINING_FACT_RULES } from '../../../src/core/config/rules/crossChecks';
import { ACCELERATE_RULES } from '../../../src/core/config/rules/kindRules';
import { SWEEP_PARAMETER_RULES, SWEEP_RULES } from '../../../src/core/config/rules/sweepRules';
import { functionSizes } from '../../../scripts/code-sizes';

const REPO = join(__dirname, '../../..');
const FIXTURES = ['test/fixtures/config', 'test/fixtures/runspec'];
const RULE_FIXTURES = 'test/fixtures/config/rules';
const TABLES: ReadonlyArray<readonly Rule<never>[]> = [RUN_SPEC_RULES, TRAINING_FACT_RULES, ACCELERATE_RULES, SWEEP_RULES, SWEEP_PARAMETER_RULES];
/** The files that held checkRunSpec, checkTrainingFacts, checkSweep and checkAccelerate, and the rules split out of them. */
const RULE_FILES = [
  'crossChecks.ts',
  'kindRules.ts',
  'sweepRules.ts',
  'runSpecRules.ts',
  'runSpecFacts.ts',
  'runSpecLauncherRules.ts',
  'runSpecFileRules.ts',
  'ruleTable.ts',
];

const ids = TABLES.flatMap((t) => t.map((r) => r.id));

function filesUnder(rel: string): string[] {
  return readdirSync(join(REPO, rel)).flatMap((n) => {
    const p = `${rel}/${n}`;
    return statSync(join(REPO, p)).isDirectory() ? filesUnder(p) : /\.(ya?ml|json|env)$|^\.env/.test(n) ? [p] : [];
  });
}

/** Which rules report on each fixture file (validated as the editor does, with the files beside it). */
function hitsByFile(): Map<string, Set<string>> {
  const byFile = new Map<string, Set<string>>();
  let current = new Set<string>();
  traceRules((id) => current.add(id));
  try {
    for (const f of FIXTURES.flatMap(filesUnder)) {
      current = new Set();
      const abs = join(REPO, f);
      validateBytes(readFileSync(abs), { fileName: abs, files: nodeFiles, libraryParseLimit: Infinity });
      byFile.set(f, current);
    }
  } finally {
    traceRules(undefined);
  }
  return byFile;
}

test('rule tables: every rule id is unique and names its check', () => {
  assert.ok(ids.length >= 40, `only ${ids.length} rules`);
  const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
  assert.deepEqual(repeated, [], `rule ids used twice: ${repeated.join(', ')}`);
  for (const id of ids) assert.match(id, /^(runspec|facts|accelerate|sweep)\.[a-z0-9-]+$/, id);
});

test('rule tables: every rule reports on at least one fixture, and each rules/<id>/ fixture makes its own rule report', () => {
  const byFile = hitsByFile();
  const hit = new Set([...byFile.values()].flatMap((s) => [...s]));
  const never = ids.filter((id) => !hit.has(id));
  assert.deepEqual(never, [], `rules no fixture under ${FIXTURES.join(', ')} makes report: ${never.join(', ')}`);
  const folders = readdirSync(join(REPO, RULE_FIXTURES));
  assert.deepEqual(
    folders.filter((d) => !ids.includes(d)),
    [],
    `folders under ${RULE_FIXTURES} named after no rule`,
  );
  for (const id of folders) {
    const own = [...byFile].filter(([f]) => f.startsWith(`${RULE_FIXTURES}/${id}/`));
    assert.ok(own.length > 0, `${RULE_FIXTURES}/${id} holds no config file`);
    assert.ok(
      own.some(([, s]) => s.has(id)),
      `${id} does not report on ${own.map(([f]) => relative(RULE_FIXTURES, f)).join(', ')}`,
    );
  }
});

test('rule files: no function over 60 lines', () => {
  const long = RULE_FILES.flatMap((name) => {
    const file = `src/core/config/rules/${name}`;
    return functionSizes(file, readFileSync(join(REPO, file), 'utf8'))
      .filter((f) => f.lines > 60)
      .map((f) => `${file}:${f.line} ${f.name} (${f.lines} lines)`);
  });
  assert.deepEqual(long, [], `functions over 60 lines: ${long.join('; ')}`);
});
