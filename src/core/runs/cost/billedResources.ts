// What a cloud run creates that bills, for the Start Training confirmation: the instance (type, GPUs, how many in
// all), its root disk and any persistent volume, each with what teardown does to it. The spec is workspace content:
// the person sees every billed thing it asks for before anything is launched.
import type { Offer } from '../../providers/provider';
import { relaunchPolicyOf } from '../lifecycle/runAttempts';
import { volumeOf } from '../hosts/runVolume';
import { machinesOf } from '../lifecycle/multiNode';
import type { TeardownSettings } from '../lifecycle/teardown';
import type { RunSpec } from '../../config/runSpecDefaults';

export interface BilledResourcesInput {
  readonly offer: Pick<Offer, 'provider' | 'instanceType' | 'gpu' | 'gpuCount' | 'spot' | 'region' | 'zone'>;
  readonly spec: RunSpec;
  readonly teardown: TeardownSettings;
  /** The provider can stop (not only terminate) an instance: Provider.canStop. */
  readonly canStop: boolean;
}

/** The default boot disk of providers/ec2/instances.ts and gcp/instances.ts (GCP takes the image's size when it is larger). */
const DEFAULT_DISK_GB = 200;

/** What finishGuarded (teardown.ts) will really do at the end of the run. */
function endAction(i: BilledResourcesInput): 'terminate' | 'stop' | 'keep' {
  const { policy, idleMinutes } = i.teardown;
  if (policy === 'keep' && idleMinutes !== undefined && idleMinutes > 0) return 'keep';
  if (policy === 'stop' && i.canStop && !i.offer.spot) return 'stop';
  return 'terminate';
}

/** One line per billed resource, in launch order. */
export function billedResources(i: BilledResourcesInput): string[] {
  const { offer } = i;
  const end = endAction(i);
  const where = `${offer.region}${offer.zone ? `/${offer.zone}` : ''}`;
  const attempts = offer.spot ? (relaunchPolicyOf(i.spec)?.maxAttempts ?? 1) : 1;
  const endText =
    end === 'terminate'
      ? 'terminated when the run ends'
      : end === 'stop'
        ? 'stopped when the run ends (no GPU charge while stopped)'
        : `kept running when the run ends, billed until the watchdog shuts it down after ${i.teardown.idleMinutes} idle minutes`;
  const replacements = attempts > 1 ? `; after a spot reclaim a replacement is launched, up to ${attempts} instances in all, one at a time` : '';
  // A multi-node run launches one instance per machine rank, all in one zone (clusterLaunch.ts).
  const nodes = machinesOf(i.spec);
  const count =
    nodes > 1
      ? `${nodes} × ${offer.instanceType} (${offer.gpuCount}× ${offer.gpu} each, one per machine rank, with the network between them)`
      : `1 × ${offer.instanceType} (${offer.gpuCount}× ${offer.gpu}${offer.spot ? ', spot' : ''})`;
  const lines = [`Instance: ${count} in ${where}, ${endText}${replacements}.`];

  const diskFate =
    end === 'terminate'
      ? 'deleted with the instance'
      : end === 'stop'
        ? 'kept while the instance is stopped, billed per GB-month until you terminate it'
        : 'kept with the running instance';
  const disk = i.spec.target.disk_gb;
  const each = nodes > 1 ? ` on each of the ${nodes}` : '';
  if (offer.provider === 'ec2') lines.push(`Root disk: ${disk ?? DEFAULT_DISK_GB} GB gp3 EBS (encrypted)${each}, ${diskFate}.`);
  else if (offer.provider === 'gcp')
    lines.push(`Boot disk: ${disk !== undefined ? `${disk} GB` : `${DEFAULT_DISK_GB} GB (more if the image needs it)`} pd-balanced${each}, ${diskFate}.`);
  else if (offer.provider === 'lambda') lines.push('Root disk: part of the instance (no separate charge), gone when it is terminated.');

  const volume = volumeOf(i.spec);
  if (volume) {
    lines.push(
      offer.provider === 'ec2'
        ? `Volume ${volume.name}: ${volume.sizeGiB} GB gp3 EBS (made when none has that name; an existing one keeps its size), NOT deleted by teardown: it bills until you delete it.`
        : `Volume ${volume.name}: not made on ${offer.provider} (persistent volumes are EC2 only).`,
    );
  }
  return lines;
}
