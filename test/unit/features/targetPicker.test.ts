// Issue 39.7: the target picker's setup rows (one per missing cloud setting, only the spec's cloud when it names
// one) and the editor title's action. The picker itself is driven in the host suite (test/vscode/suite/hostPickers.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cloudOfProblem, fixForProblem, setupRows } from '../../../src/core/runs/hosts/targetFixes';
import { CLOUD_LABELS, EXTENSION_HINTS } from '../../../src/core/providers/providerSelection';
import { runContextValue } from '../../../src/core/runs/view/runContextValue';
import { runsMenuOffers } from '../../support/runsMenu';

// The lines cloudProviders() gives with nothing set up, and the one offersForTarget adds for the spec's cloud.
const NOTHING_SET_UP = [
  `${CLOUD_LABELS.lambda}: no API key (${EXTENSION_HINTS.lambda})`,
  `${CLOUD_LABELS.ec2}: no region (${EXTENSION_HINTS.ec2})`,
  `${CLOUD_LABELS.gcp}: needs ${EXTENSION_HINTS.gcp}`,
];
const GCP_NOT_CONFIGURED = "gcp: not configured (the run spec's target.provider)";

test('a GCP spec: one "GCP: set project…" row, no other cloud, and the not-configured line folded into it', () => {
  const { fixes, notes } = setupRows([...NOTHING_SET_UP, GCP_NOT_CONFIGURED], 'gcp');
  assert.deepEqual(
    fixes.map((f) => f.label),
    ['GCP: set project…'],
  );
  assert.deepEqual(notes, []);
});

test('GCP with its project set but no sign-in: the row asks for the sign-in, not the project again', () => {
  const { fixes } = setupRows([...NOTHING_SET_UP, GCP_NOT_CONFIGURED], 'gcp', { project: true, credentials: false });
  assert.deepEqual(
    fixes.map((f) => [f.label, f.fix.kind]),
    [['GCP: sign in (Application Default Credentials)…', 'terminal']],
  );
  const both = setupRows(NOTHING_SET_UP, 'gcp', { project: false, credentials: false }).fixes.map((f) => f.label);
  assert.deepEqual(both, ['GCP: set project…', 'GCP: sign in (Application Default Credentials)…']);
});

test('a spec naming no cloud (an SSH host) is offered every cloud, each once; an offers error stays a note', () => {
  const { fixes, notes } = setupRows([...NOTHING_SET_UP, ...NOTHING_SET_UP, 'gcp: HTTP 503 from compute.googleapis.com'], undefined);
  assert.deepEqual(
    fixes.map((f) => f.label),
    ['Lambda Cloud: set API key…', 'AWS EC2: set region…', 'GCP: set project…'],
  );
  assert.deepEqual(notes, ['gcp: HTTP 503 from compute.googleapis.com']);
  assert.equal(fixForProblem('gcp: HTTP 503 from compute.googleapis.com'), undefined, 'an API error is no missing setting');
  assert.equal(cloudOfProblem('AWS EC2: no region'), 'ec2');
  assert.equal(setupRows(NOTHING_SET_UP, 'lambda').fixes.length, 1);
});

test('package.json: the editor title runs "Start Training…" on a run spec; the palette keeps "Start Training on A100"', () => {
  const pkg = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as {
    contributes: {
      commands: Array<{ command: string; title: string }>;
      menus: Record<string, Array<{ command: string; when?: string }>>;
    };
  };
  const title = pkg.contributes.menus['editor/title'] ?? [];
  const start = title.filter((m) => /startTraining/.test(m.command));
  assert.deepEqual(
    start.map((m) => m.command),
    ['remoteFinetune.startTraining'],
  );
  assert.equal(pkg.contributes.commands.find((c) => c.command === 'remoteFinetune.startTraining')?.title, 'Start Training…');
  const when = new RegExp(/resourceFilename =~ \/(.*)\/ /.exec(start[0]!.when ?? '')![1]!);
  for (const name of ['finetune.yaml', 'finetune.yml', 'finetune-qlora.yaml', 'sft.finetune.yaml']) assert.ok(when.test(name), name);
  assert.ok(!when.test('accelerate.yaml'));
  const a100 = pkg.contributes.commands.find((c) => c.command === 'remoteFinetune.startTrainingA100');
  assert.equal(a100?.title, 'Start Training on A100');
  const hidden = (pkg.contributes.menus.commandPalette ?? []).find((m) => m.command === 'remoteFinetune.startTrainingA100');
  assert.ok(!hidden || hidden.when !== 'false', 'the palette still lists it');
});

test("package.json: the end notification's actions stay in the Runs view (Reveal Adapter, metrics, logs) on a finished run", () => {
  // A completed run's item, as the Runs view gives it, in the menu as VS Code evaluates it.
  const offers = runsMenuOffers(
    runContextValue({ id: 'r', name: 'n', specPath: '/s', specHash: 'h', createdAt: '', updatedAt: '', status: 'completed', provider: 'ssh' }),
  );
  const onDone = (command: string): boolean => offers.has(command);
  for (const c of ['remoteFinetune.run.revealAdapter', 'remoteFinetune.run.showMetrics', 'remoteFinetune.run.showLogs']) assert.ok(onDone(c), c);
});
