// The manifest side of "a setting that decides where credentials or commands go is never workspace-settable":
// machine scope (VS Code then ignores workspace values), and listed as restricted in untrusted workspaces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const pkg = JSON.parse(readFileSync(join(__dirname, '../../../package.json'), 'utf8')) as {
  capabilities: { untrustedWorkspaces: { restrictedConfigurations?: string[] } };
  contributes: { configuration: { properties: Record<string, { scope?: string }> } };
};
// Where keys, code or connections go: the W&B server, the interpreter run on hosts, ssh_config, cloud endpoints,
// accounts and ports, the startup sweep that terminates instances, where the host sends each run's outcome and its
// MLflow metrics.
const SENSITIVE = [
  'remoteFinetune.wandb.baseUrl',
  'remoteFinetune.remotePython',
  'remoteFinetune.ssh.configFile',
  'remoteFinetune.lambda.apiUrl',
  'remoteFinetune.aws.region',
  'remoteFinetune.gcp.project',
  'remoteFinetune.gcp.zone',
  'remoteFinetune.cloud.sshPort',
  'remoteFinetune.cloud.reconcileOnStartup',
  'remoteFinetune.notify.webhookUrl',
  'remoteFinetune.notify.ntfyTopic',
  'remoteFinetune.notify.ntfyServer',
  'remoteFinetune.mlflow.trackingUri',
  // The interpreter Try Adapter runs on this machine.
  'remoteFinetune.tryAdapter.localPython',
];

test('manifest: every setting that decides where credentials or commands go is machine-scoped and restricted', () => {
  const props = pkg.contributes.configuration.properties;
  for (const key of Object.keys(props)) assert.ok(SENSITIVE.includes(key), `${key}: a new setting must be classified here`);
  for (const key of SENSITIVE) {
    assert.ok(props[key], `${key} is contributed`);
    assert.ok(['machine', 'application'].includes(props[key]!.scope ?? 'window'), `${key} has scope ${props[key]!.scope ?? 'window (the default)'}`);
    assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations?.includes(key), `${key} is not in restrictedConfigurations`);
  }
});
