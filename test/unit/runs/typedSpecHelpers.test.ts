// The helpers Start Training feeds read the typed RunSpec (issue 38.1), not an untyped record: a test over their
// declarations, so a helper that goes back to `Record<string, unknown>` fails here; and the multi-node start is
// checked in one place (runStart.ts), not once more in Start Training.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const REPO = join(__dirname, '../../..');

/** Per file: functions whose parameter `spec` must be a RunSpec, and interfaces whose field `spec` must be. */
const TYPED: Record<string, readonly string[]> = {
  'src/core/runs/lifecycle/multiNode.ts': ['machinesOf', 'hostsOf', 'launchesMachines', 'multiNodeProblem', 'cloudMultiNodeProblem'],
  'src/core/runs/lifecycle/runAttempts.ts': ['relaunchPolicyOf'],
  'src/core/runs/hosts/runVolume.ts': ['volumeOf'],
  'src/core/runs/cost/runBudget.ts': ['budgetLine'],
  'src/core/runs/cost/billedResources.ts': ['BilledResourcesInput'],
  'src/core/runs/lifecycle/runEnv.ts': ['RunEnvInput'],
  'src/core/runs/hosts/awsSessionCredentials.ts': ['sessionCredentialsWarning'],
  'src/core/runs/lifecycle/runPlan.ts': ['outputDestinations', 'dropUnneededSecrets'],
  'src/core/runs/lifecycle/runResume.ts': ['relaunchStartNote', 'afterReclaimAdvice'],
};

/** The declared type of `spec` in each named function or interface of a file, as written. */
function specTypes(file: string, names: readonly string[]): Record<string, string | undefined> {
  const sf = ts.createSourceFile(file, readFileSync(join(REPO, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const out: Record<string, string | undefined> = Object.fromEntries(names.map((n) => [n, undefined]));
  for (const s of sf.statements) {
    if (ts.isFunctionDeclaration(s) && s.name && names.includes(s.name.text)) {
      out[s.name.text] = s.parameters.find((p) => p.name.getText(sf) === 'spec')?.type?.getText(sf);
    } else if (ts.isInterfaceDeclaration(s) && names.includes(s.name.text)) {
      const m = s.members.find((x) => x.name?.getText(sf) === 'spec');
      out[s.name.text] = m && ts.isPropertySignature(m) ? m.type?.getText(sf) : undefined;
    }
  }
  return out;
}

test('typed spec: the helpers Start Training feeds take the RunSpec', () => {
  const untyped: string[] = [];
  for (const [file, names] of Object.entries(TYPED))
    for (const [name, type] of Object.entries(specTypes(file, names)))
      if (!/^RunSpec( \| undefined)?$/.test(type ?? '')) untyped.push(`${file} ${name}: spec is ${type ?? 'missing'}`);
  assert.deepEqual(untyped, [], `helpers that still take the spec untyped:\n${untyped.join('\n')}`);
});

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

test('typed spec: a multi-node start is checked in one place (the start itself), not again in Start Training', () => {
  const calls = tsFiles(join(REPO, 'src')).flatMap((f) => {
    const text = readFileSync(f, 'utf8');
    return [...text.matchAll(/(?<!function )\b(multiNodeProblem|cloudMultiNodeProblem)\(/g)].map((m) => `${relative(REPO, f).split('\\').join('/')} ${m[1]}`);
  });
  assert.deepEqual(
    [...new Set(calls.map((c) => c.split(' ')[0]))],
    ['src/core/runs/lifecycle/runStart.ts'],
    `multi-node checks called from: ${calls.join(', ')}`,
  );
});
