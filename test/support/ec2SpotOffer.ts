// The EC2 spot offer the spot-recovery tests launch (one A10G, the emulator's g5.xlarge), and its launch request
// under a spec's target, so the tests build both the way Start Training does (launchRequestFor).
import type { LaunchRequest, Offer } from '../../src/core/providers/provider';
import type { TargetSpec } from '../../src/core/providers/targetSpec';
import { launchRequestFor } from '../../src/core/runs/hosts/targetOffers';

export const G5_SPOT_OFFER: Offer = {
  provider: 'ec2',
  instanceType: 'g5.xlarge',
  gpu: 'A10G',
  gpuCount: 1,
  vramGiB: 24,
  region: 'us-east-1',
  zone: 'us-east-1a',
  pricePerHour: 0.5,
  spot: true,
  capacity: 'unknown',
};

export function g5SpotLaunch(runId: string, target: Partial<TargetSpec>, sshPublicKey: string, offer: Offer = G5_SPOT_OFFER): LaunchRequest {
  return launchRequestFor(runId, offer, target, sshPublicKey);
}
