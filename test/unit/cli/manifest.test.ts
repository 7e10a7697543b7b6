// The manifest's promises that no other test reads: where the extension runs, what it does untrusted,
// when it activates, and that it sends nothing anywhere.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const REPO = resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as {
  name: string;
  displayName: string;
  engines: { vscode: string };
  categories: string[];
  icon: string;
  extensionKind: string[];
  activationEvents: string[];
  capabilities: { untrustedWorkspaces: { supported: string | boolean; description?: string }; virtualWorkspaces: boolean };
  contributes: { commands: { command: string; category?: string; enablement?: string }[] };
};

function walk(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) walk(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

test('manifest: name, display name, engines include 1.100, categories, icon', () => {
  assert.equal(pkg.name, 'remote-finetune');
  assert.equal(pkg.displayName, 'Remote Fine-Tune');
  assert.match(pkg.engines.vscode, /^\^1\.(100|[1-9]\d)\.\d+$|^\^1\.100\.0$/);
  assert.deepEqual(pkg.categories, ['Machine Learning', 'Other']);
  assert.ok(statSync(join(REPO, pkg.icon)).size > 0);
});

test('manifest: runs where the SSH keys are (ui first, workspace when VS Code is remote), limited when untrusted', () => {
  assert.deepEqual(pkg.extensionKind, ['ui', 'workspace']);
  assert.equal(pkg.capabilities.untrustedWorkspaces.supported, 'limited');
  assert.match(pkg.capabilities.untrustedWorkspaces.description ?? '', /config checks/);
  // Everything that connects, syncs, provisions or runs is disabled in an untrusted workspace.
  const remoteActions = pkg.contributes.commands.filter((c) =>
    /start|stop|terminate|download|runAgain|findRuns|addHost|probeHost|cloudOffers|orphans/i.test(c.command),
  );
  assert.ok(remoteActions.length >= 10);
  for (const c of remoteActions) assert.equal(c.enablement, 'isWorkspaceTrusted', `${c.command} must not run untrusted`);
  // The config checks are the part that works untrusted.
  assert.equal(pkg.contributes.commands.find((c) => c.command === 'remoteFinetune.validateConfig')?.enablement, undefined);
});

test('manifest: activation only where needed, every command in the Fine-Tune category', () => {
  assert.ok(!pkg.activationEvents.includes('*'));
  assert.ok(!pkg.activationEvents.includes('onStartupFinished'));
  assert.ok(pkg.activationEvents.some((e) => e.startsWith('workspaceContains:') && e.includes('finetune')));
  // A **/ pattern is a workspace search, which VS Code abandons after 7 s without activating ("Not activating
  // extension … Timed out while searching"): in a large workspace live runs would not be reattached. A spec at the
  // top level is an exists check, which cannot time out.
  assert.ok(pkg.activationEvents.includes('workspaceContains:finetune.yaml'));
  assert.ok(pkg.activationEvents.includes('workspaceContains:finetune.yml'));
  for (const c of pkg.contributes.commands) assert.equal(c.category, 'Fine-Tune', c.command);
});

test('no telemetry: the extension never creates a telemetry logger or reports usage', () => {
  for (const f of walk(join(REPO, 'src'))) {
    const text = readFileSync(f, 'utf8');
    assert.doesNotMatch(text, /createTelemetryLogger|TelemetryReporter|applicationinsights/i, f);
  }
});
