// A persistent EBS volume for an EC2 run (spec `target.volume: {name, size_gb}`): data, the Hugging Face cache
// and checkpoints outlive the instance (seed 004: "Attaches a persistent EBS volume for model storage"). The
// volume is found by its name tag, made on first use in the instance's zone (an EBS volume attaches only in its
// own Availability Zone, so a later launch goes to the zone the volume is in), attached as /dev/sdf, and never
// deleted by teardown: it bills (gp3, per GB-month) until the person deletes it.
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import { abortableSleep } from '../../abortableSleep';
import { OWNER_TAG, ProviderError } from '../provider';

export const VOLUME_TAG = 'remote-finetune:volume';
export const VOLUME_DEVICE = '/dev/sdf';

export interface VolumeSpec {
  readonly name: string;
  readonly sizeGiB: number;
}

export interface AttachedVolume {
  readonly volumeId: string;
  readonly zone: string;
  readonly sizeGiB: number;
  /** Made for this run (empty, to be formatted) rather than found from an earlier one. */
  readonly created: boolean;
}

type Send = <T>(make: (sdk: typeof Ec2Sdk) => object, signal?: AbortSignal) => Promise<T>;

export async function findVolume(send: Send, name: string, signal?: AbortSignal): Promise<Ec2Sdk.Volume | undefined> {
  const r = await send<{ Volumes?: Ec2Sdk.Volume[] }>(
    (sdk) => new sdk.DescribeVolumesCommand({ Filters: [{ Name: `tag:${VOLUME_TAG}`, Values: [name] }] }),
    signal,
  );
  const live = (r.Volumes ?? []).filter((v) => v.State !== 'deleting' && v.State !== 'deleted' && v.State !== 'error');
  if (live.length > 1)
    throw new ProviderError('invalid', `more than one EBS volume is tagged ${VOLUME_TAG}=${name}: ${live.map((v) => v.VolumeId).join(', ')}`, 'ec2');
  return live[0];
}

async function waitVolume(
  send: Send,
  volumeId: string,
  ok: (v: Ec2Sdk.Volume) => boolean,
  what: string,
  signal?: AbortSignal,
  timeoutMs = 300_000,
): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (let delay = 250; ; delay = Math.min(delay * 2, 5000)) {
    const r = await send<{ Volumes?: Ec2Sdk.Volume[] }>((sdk) => new sdk.DescribeVolumesCommand({ VolumeIds: [volumeId] }), signal);
    const v = r.Volumes?.[0];
    if (v && ok(v)) return;
    if (Date.now() > end) throw new ProviderError('timeout', `EBS volume ${volumeId} did not become ${what} in ${timeoutMs / 1000} s`, 'ec2');
    await abortableSleep(delay, signal, () => new ProviderError('aborted', 'cancelled', 'ec2'));
  }
}

/** Finds or makes the named volume in the instance's zone and attaches it; the instance must be running. */
export async function attachNamedVolume(
  send: Send,
  instance: { readonly id: string; readonly zone?: string | undefined },
  spec: VolumeSpec,
  tags: ReadonlyArray<{ Key: string; Value: string }>,
  signal?: AbortSignal,
): Promise<AttachedVolume> {
  if (!instance.zone) throw new ProviderError('invalid', `instance ${instance.id} has no Availability Zone to put the volume in`, 'ec2');
  let vol = await findVolume(send, spec.name, signal);
  let created = false;
  if (vol) {
    if (vol.AvailabilityZone !== instance.zone)
      throw new ProviderError(
        'invalid',
        `EBS volume ${vol.VolumeId} ("${spec.name}") is in ${vol.AvailabilityZone}, the instance in ${instance.zone}: a volume attaches only in its own zone (set target.zone: ${vol.AvailabilityZone}).`,
        'ec2',
      );
    const other = (vol.Attachments ?? []).find((a) => a.InstanceId && a.InstanceId !== instance.id && a.State !== 'detached');
    if (other)
      throw new ProviderError(
        'invalid',
        `EBS volume ${vol.VolumeId} ("${spec.name}") is attached to ${other.InstanceId}; detach it or stop that run first.`,
        'ec2',
      );
  } else {
    vol = await send<Ec2Sdk.Volume>(
      (sdk) =>
        new sdk.CreateVolumeCommand({
          AvailabilityZone: instance.zone,
          Size: spec.sizeGiB,
          VolumeType: 'gp3',
          Encrypted: true,
          TagSpecifications: [
            {
              ResourceType: 'volume',
              Tags: [{ Key: 'Name', Value: `rft-volume-${spec.name}` }, { Key: VOLUME_TAG, Value: spec.name }, { Key: OWNER_TAG, Value: 'true' }, ...tags],
            },
          ],
        }),
      signal,
    );
    created = true;
  }
  const volumeId = vol.VolumeId;
  if (!volumeId) throw new ProviderError('server', 'CreateVolume returned no volume id', 'ec2');
  await waitVolume(send, volumeId, (v) => v.State === 'available' || (v.Attachments ?? []).some((a) => a.InstanceId === instance.id), 'available', signal);
  const already = (vol.Attachments ?? []).some((a) => a.InstanceId === instance.id);
  if (!already) await send((sdk) => new sdk.AttachVolumeCommand({ VolumeId: volumeId, InstanceId: instance.id, Device: VOLUME_DEVICE }), signal);
  await waitVolume(send, volumeId, (v) => (v.Attachments ?? []).some((a) => a.InstanceId === instance.id && a.State === 'attached'), 'attached', signal);
  return { volumeId, zone: instance.zone, sizeGiB: vol.Size ?? spec.sizeGiB, created };
}

/**
 * Mounts the attached volume at `mountPoint` on the instance (formatting it only when it holds no filesystem),
 * owned by the login user. Nitro instances show EBS as NVMe, named by the volume id in /dev/disk/by-id; Xen ones
 * as /dev/xvdf. Prints `RFT_VOLUME_MOUNTED <mount point>`.
 */
export function mountVolumeScript(volumeId: string, mountPoint = '/mnt/rft-volume'): string {
  if (!/^vol-[0-9a-f]+$/.test(volumeId)) throw new RangeError(`not an EBS volume id: ${volumeId}`);
  if (!/^\/[A-Za-z0-9._/-]+$/.test(mountPoint)) throw new RangeError(`bad mount point: ${mountPoint}`);
  const nvme = `/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_${volumeId.replace('-', '')}`;
  return [
    `mp=${mountPoint}; dev=''`,
    `i=0; while [ $i -lt 60 ] && [ -z "$dev" ]; do`,
    `  for d in ${nvme} /dev/xvdf /dev/sdf; do if [ -b "$d" ]; then dev=$(readlink -f "$d"); break; fi; done`,
    `  [ -n "$dev" ] || sleep 2; i=$((i+1))`,
    `done`,
    `[ -n "$dev" ] || { echo "RFT_VOLUME_MISSING ${volumeId}"; exit 3; }`,
    `if ! mountpoint -q "$mp"; then`,
    `  sudo -n blkid "$dev" >/dev/null 2>&1 || sudo -n mkfs.ext4 -q -L rft-volume "$dev" || exit 4`,
    `  sudo -n mkdir -p "$mp" && sudo -n mount "$dev" "$mp" || exit 5`,
    `fi`,
    `sudo -n chown "$(id -u):$(id -g)" "$mp" || exit 6`,
    `echo "RFT_VOLUME_MOUNTED $mp"`,
  ].join('\n');
}
