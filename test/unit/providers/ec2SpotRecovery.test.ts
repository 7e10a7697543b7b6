// What a spot launch asks EC2 for under each recovery mode, checked against the constraints of botocore's EC2
// model (SpotMarketOptions, HibernationOptionsRequest) and the hibernation prerequisites page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hibernationSupported, spotLaunchOptions } from '../../../src/core/providers/ec2/spotRecovery';
import { launchRequestFor } from '../../../src/core/runs/hosts/targetOffers';
import { G5_SPOT_OFFER } from '../../support/ec2SpotOffer';
import { runSpecTarget } from '../../../src/core/config/schemas/runSpec';

test('spot launch options: on-demand and extension mode unchanged; cloud mode is a persistent request that stops, and the guest power-off stops too', () => {
  assert.deepEqual(spotLaunchOptions({ spot: false, instanceType: 'g5.xlarge', spotRecovery: 'cloud' }), { InstanceInitiatedShutdownBehavior: 'terminate' });
  assert.deepEqual(spotLaunchOptions({ spot: true, instanceType: 'g5.xlarge' }), {
    InstanceMarketOptions: { MarketType: 'spot', SpotOptions: { SpotInstanceType: 'one-time', InstanceInterruptionBehavior: 'terminate' } },
    InstanceInitiatedShutdownBehavior: 'terminate',
  });
  assert.deepEqual(spotLaunchOptions({ spot: true, instanceType: 'g5.xlarge', spotRecovery: 'cloud' }), {
    InstanceMarketOptions: { MarketType: 'spot', SpotOptions: { SpotInstanceType: 'persistent', InstanceInterruptionBehavior: 'stop' } },
    InstanceInitiatedShutdownBehavior: 'stop',
  });
});

test('spot launch options: hibernate only where EC2 hibernates the family (no GPU family), with HibernationOptions and behaviour hibernate together', () => {
  const gpu = spotLaunchOptions({ spot: true, instanceType: 'g5.xlarge', spotRecovery: 'cloud', spotHibernate: true });
  assert.equal(gpu.InstanceMarketOptions?.SpotOptions?.InstanceInterruptionBehavior, 'stop');
  assert.equal(gpu.HibernationOptions, undefined);
  assert.match(gpu.note ?? '', /does not hibernate g5\.xlarge/);
  const cpu = spotLaunchOptions({ spot: true, instanceType: 'm5.large', spotRecovery: 'cloud', spotHibernate: true });
  assert.deepEqual(cpu.InstanceMarketOptions?.SpotOptions, { SpotInstanceType: 'persistent', InstanceInterruptionBehavior: 'hibernate' });
  assert.deepEqual(cpu.HibernationOptions, { Configured: true });
  for (const t of ['g4dn.xlarge', 'g5.12xlarge', 'g6.xlarge', 'p3.2xlarge', 'p4d.24xlarge', 'p5.48xlarge']) assert.equal(hibernationSupported(t), false, t);
});

test('the spec: target.spot_recovery reaches an EC2 spot launch only; the schema knows it', () => {
  const offer = G5_SPOT_OFFER;
  const target = { provider: 'ec2', spot: true, spot_recovery: 'cloud', spot_hibernate: true } as const;
  const req = launchRequestFor('rft-1', offer, target, 'ssh-ed25519 AAAA x');
  assert.deepEqual([req.spotRecovery, req.spotHibernate], ['cloud', true]);
  assert.equal(launchRequestFor('rft-1', { ...offer, spot: false }, target, 'k').spotRecovery, undefined, 'an on-demand offer has no spot request');
  assert.equal(
    launchRequestFor('rft-1', { ...offer, provider: 'gcp' }, { ...target, provider: 'gcp' }, 'k').spotRecovery,
    undefined,
    'GCP keeps the extension relaunch',
  );
  assert.equal(runSpecTarget.safeParse({ provider: 'ec2', gpu: 'A10G', spot: true, spot_recovery: 'cloud' }).success, true);
  assert.equal(runSpecTarget.safeParse({ provider: 'ec2', gpu: 'A10G', spot: true, spot_recovery: 'laptop' }).success, false);
});
