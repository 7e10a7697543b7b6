import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { Ec2Emulator } from '../../emulators/ec2';

const EXTENSION_ID = 'remote-finetune.remote-finetune';

suite('providers', () => {
  suiteSetup(async () => {
    await vscode.extensions.getExtension(EXTENSION_ID)!.activate();
  });

  test('the cloud commands and settings are contributed and registered', async () => {
    const all = new Set(await vscode.commands.getCommands(true));
    for (const c of ['remoteFinetune.setLambdaApiKey', 'remoteFinetune.terminateOrphans']) assert.ok(all.has(c), c);
    const cfg = vscode.workspace.getConfiguration('remoteFinetune');
    assert.equal(cfg.get('gcp.zone'), 'us-central1-a');
    assert.equal(cfg.get('cloud.reconcileOnStartup'), true);
  });

  test('Terminate Orphaned Instances with no cloud used reaches no cloud and terminates nothing', async () => {
    const n = await vscode.commands.executeCommand<number>('remoteFinetune.terminateOrphans');
    assert.equal(n, 0);
  });

  test('Show Cloud GPU Offers lists EC2 T4 offers with prices through the real AWS SDK (EC2 emulator, a test double for the cloud)', async () => {
    const emu = await new Ec2Emulator().start();
    const saved = { ...process.env };
    // The SDK's documented service endpoint variable; fake keys for its default credential chain.
    process.env.AWS_ENDPOINT_URL_EC2 = emu.url;
    process.env.AWS_ACCESS_KEY_ID = 'AKIAEMULATOR000000';
    process.env.AWS_SECRET_ACCESS_KEY = 'emulator-secret';
    const cfg = vscode.workspace.getConfiguration('remoteFinetune');
    await cfg.update('aws.region', 'us-west-9', vscode.ConfigurationTarget.Global);
    try {
      const n = await vscode.commands.executeCommand<number>('remoteFinetune.showCloudOffers', { gpu: 'T4', hours: 2 });
      assert.ok(n >= 2, `offers: ${n}`);
      assert.ok(emu.calls.includes('DescribeSpotPriceHistory'), emu.calls.join(','));
      await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    } finally {
      await cfg.update('aws.region', undefined, vscode.ConfigurationTarget.Global);
      for (const k of ['AWS_ENDPOINT_URL_EC2', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'])
        if (saved[k] === undefined) delete process.env[k];
        else process.env[k] = saved[k];
      await emu.stop();
    }
  });
});
