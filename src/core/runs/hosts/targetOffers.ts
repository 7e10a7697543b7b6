// The run spec's `target` decides where a run may go: the provider, region, zone, spot or on-demand, the
// instance type, the GPU count and the boot disk all narrow the offers the picker lists, and the launch uses
// them as written. A spec that names ssh or local leaves the cloud offers open (the picker lists the host
// first); one that names a cloud lists only that cloud's offers.
import { compareOffers, matchesQuery } from '../../providers/offers';
import type { TargetSpec } from '../../providers/targetSpec';
import type { LaunchRequest, Offer, OfferQuery, Provider, ProviderKind } from '../../providers/provider';

const CLOUDS: readonly ProviderKind[] = ['lambda', 'ec2', 'gcp'];

/** The cloud a spec names, or undefined when it names an SSH host or this machine. */
export function cloudOf(target: Partial<TargetSpec> | undefined): ProviderKind | undefined {
  return target?.provider && CLOUDS.includes(target.provider) ? target.provider : undefined;
}

/**
 * The offer query for one GPU under the spec's target. The GPU count defaults to 1 as the schema says; spot
 * is asked only when the spec says so (true: spot only, false: on-demand only).
 */
export function offerQueryFor(target: Partial<TargetSpec> | undefined, gpu: string): OfferQuery {
  const cloud = cloudOf(target);
  return {
    gpu,
    gpuCount: target?.gpu_count ?? 1,
    ...(typeof target?.spot === 'boolean' ? { spot: target.spot } : {}),
    // Region, zone and type are a cloud's words: under an ssh/local target they name nothing in the clouds.
    ...(cloud && target?.region ? { region: target.region } : {}),
    ...(cloud && target?.zone ? { zone: target.zone } : {}),
    ...(cloud && target?.instance_type ? { instanceType: target.instance_type } : {}),
  };
}

export interface TargetOffer {
  readonly provider: Provider;
  readonly offer: Offer;
}

/** Offers of every provider the target allows for these GPUs, launchable and cheapest first. */
export async function offersForTarget(
  providers: readonly Provider[],
  gpus: readonly string[],
  target?: Partial<TargetSpec>,
  signal?: AbortSignal,
): Promise<{ offers: TargetOffer[]; problems: string[] }> {
  const cloud = cloudOf(target);
  const allowed = providers.filter((p) => !cloud || p.kind === cloud);
  const offers: TargetOffer[] = [];
  const problems: string[] = [];
  await Promise.all(
    allowed.map(async (provider) => {
      for (const gpu of gpus) {
        const query = offerQueryFor(target, gpu);
        try {
          // Filtered here too: a provider that cannot narrow by a field itself still never offers past the spec.
          for (const offer of await provider.listOffers(query, signal)) if (matchesQuery(offer, query)) offers.push({ provider, offer });
        } catch (err) {
          problems.push(`${provider.kind}: ${(err as Error).message}`);
        }
      }
    }),
  );
  if (cloud && allowed.length === 0) problems.push(`${cloud}: not configured (the run spec's target.provider)`);
  offers.sort((a, b) => compareOffers(a.offer, b.offer));
  return { offers, problems };
}

/** The launch the chosen offer and the spec's target make: zone and spot from the offer, the disk from the spec. */
export function launchRequestFor(runId: string, offer: Offer, target: Partial<TargetSpec> | undefined, sshPublicKey: string): LaunchRequest {
  return {
    runId,
    instanceType: offer.instanceType,
    region: offer.region,
    ...(offer.zone ? { zone: offer.zone } : cloudOf(target) && target?.zone ? { zone: target.zone } : {}),
    spot: offer.spot,
    sshPublicKey,
    ...(target?.disk_gb ? { diskGiB: target.disk_gb } : {}),
    // A zone the spec names is where the person wants it: a refusal there is final.
    ...(cloudOf(target) && target?.zone ? { zonePinned: true } : {}),
    ...(cloudOf(target) && target?.regions?.length ? { regions: target.regions } : {}),
    ...(target?.provider === 'ec2' && target.iam_instance_profile ? { iamInstanceProfile: target.iam_instance_profile } : {}),
    ...(target?.provider === 'gcp' && target.service_account ? { serviceAccount: target.service_account } : {}),
    ...(target?.provider === 'ec2' && offer.spot && target.spot_recovery === 'cloud'
      ? { spotRecovery: 'cloud' as const, ...(target.spot_hibernate ? { spotHibernate: true } : {}) }
      : {}),
  };
}
