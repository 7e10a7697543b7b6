// What the instances of one multi-node EC2 run share: a cluster placement group (the nodes packed close together
// in one Availability Zone, low-latency and high-bandwidth between them: EC2's recommendation for tightly
// coupled jobs) and a security group of the run whose one rule admits its own members on every port and
// protocol. torchrun's rendezvous port is picked at start and NCCL/gloo open ephemeral ports, so a port range
// would be a guess; the self-reference admits only the run's own instances. Both are named after the run and
// found again by that name: teardown and the orphan sweep delete them after the instances are gone.
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import { sleep } from '../abort';
import { instanceNameFor, OWNER_TAG, ProviderError, RUN_ID_TAG } from '../provider';

type Send = <T>(make: (sdk: typeof Ec2Sdk) => object, signal?: AbortSignal) => Promise<T>;
/** Runs the call again while it fails with one of the codes (EC2's eventual consistency: a new id unknown for a while). */
type UntilConsistent = <T>(codes: readonly string[], call: () => Promise<T>) => Promise<T>;

/** The run's placement group (names are unique per account and region). */
export function placementGroupName(runId: string): string {
  return instanceNameFor(runId);
}

/** The run's nodes' security group (names are unique per VPC). */
export function nodesGroupName(runId: string): string {
  return `${instanceNameFor(runId)}-nodes`;
}

/** The AWS error code a ProviderError came from (the provider's send puts it first in the message). */
export function awsCode(err: unknown): string | undefined {
  return err instanceof ProviderError ? /^([A-Za-z.]+):/.exec(err.message)?.[1] : undefined;
}

/** The run's nodes' group in the VPC, when it exists. */
export async function findNodesGroup(send: Send, runId: string, vpcId: string | undefined, signal?: AbortSignal): Promise<string | undefined> {
  const r = await send<{ SecurityGroups?: Ec2Sdk.SecurityGroup[] }>(
    (sdk) =>
      new sdk.DescribeSecurityGroupsCommand({
        Filters: [{ Name: 'group-name', Values: [nodesGroupName(runId)] }, ...(vpcId ? [{ Name: 'vpc-id', Values: [vpcId] }] : [])],
      }),
    signal,
  );
  return r.SecurityGroups?.[0]?.GroupId;
}

function runTags(runId: string): Array<{ Key: string; Value: string }> {
  return [
    { Key: OWNER_TAG, Value: 'true' },
    { Key: RUN_ID_TAG, Value: runId },
  ];
}

/** Makes (or finds) the placement group and the nodes' group with its self-referencing rule; returns the group's id. */
export async function prepareEc2Cluster(send: Send, consistent: UntilConsistent, runId: string, vpcId: string, signal?: AbortSignal): Promise<string> {
  try {
    await send(
      (sdk) =>
        new sdk.CreatePlacementGroupCommand({
          GroupName: placementGroupName(runId),
          Strategy: 'cluster',
          TagSpecifications: [{ ResourceType: 'placement-group', Tags: runTags(runId) }],
        }),
      signal,
    );
  } catch (err) {
    // A retried start of the same run made it already.
    if (awsCode(err) !== 'InvalidPlacementGroup.Duplicate') throw err;
  }
  return await ensureNodesGroup(send, consistent, runId, vpcId, signal);
}

/** The run's nodes' security group in the VPC, made when missing, with the rule that admits its own members. */
export async function ensureNodesGroup(send: Send, consistent: UntilConsistent, runId: string, vpcId: string, signal?: AbortSignal): Promise<string> {
  let groupId = await findNodesGroup(send, runId, vpcId, signal);
  if (!groupId) {
    const made = await send<{ GroupId?: string }>(
      (sdk) =>
        new sdk.CreateSecurityGroupCommand({
          GroupName: nodesGroupName(runId),
          VpcId: vpcId,
          Description: `Remote Fine-Tune: the nodes of run ${runId} reach each other`,
          TagSpecifications: [{ ResourceType: 'security-group', Tags: runTags(runId) }],
        }),
      signal,
    );
    groupId = made.GroupId;
    if (!groupId) throw new ProviderError('server', 'CreateSecurityGroup returned no id', 'ec2');
  }
  const id = groupId;
  // Right after CreateSecurityGroup the new id may be unknown to the next call (InvalidGroup.NotFound).
  await consistent(['InvalidGroup.NotFound'], async () => {
    try {
      await send(
        (sdk) =>
          new sdk.AuthorizeSecurityGroupIngressCommand({
            GroupId: id,
            IpPermissions: [{ IpProtocol: '-1', UserIdGroupPairs: [{ GroupId: id, Description: 'Remote Fine-Tune: the run nodes, to each other' }] }],
          }),
        signal,
      );
    } catch (err) {
      // An earlier attempt whose answer was lost already added it.
      if (awsCode(err) !== 'InvalidPermission.Duplicate') throw err;
    }
  });
  return id;
}

/** Retries a delete EC2 refuses while something still uses the resource (a terminating instance), within `until`. */
async function deleteWhenFree(
  what: string,
  call: () => Promise<unknown>,
  gone: readonly string[],
  busy: readonly string[],
  until: number,
  signal?: AbortSignal,
): Promise<void> {
  for (let wait = 500; ; wait = Math.min(wait * 2, 10_000)) {
    try {
      await call();
      return;
    } catch (err) {
      const code = awsCode(err);
      if (code && gone.includes(code)) return;
      if (!code || !busy.includes(code) || Date.now() + wait > until) throw new ProviderError('server', `deleting ${what}: ${(err as Error).message}`, 'ec2');
      await sleep(wait, signal);
    }
  }
}

/** Deletes the run's nodes' group (the id prepareCluster got where this process made it: a listing may lag behind). */
export async function deleteNodesGroup(send: Send, runId: string, signal?: AbortSignal, budgetMs = 180_000, knownGroupId?: string): Promise<void> {
  const groupId = knownGroupId ?? (await findNodesGroup(send, runId, undefined, signal));
  if (!groupId) return;
  await deleteWhenFree(
    `security group ${nodesGroupName(runId)}`,
    () => send((sdk) => new sdk.DeleteSecurityGroupCommand({ GroupId: groupId }), signal),
    ['InvalidGroup.NotFound'],
    ['DependencyViolation'],
    Date.now() + budgetMs,
    signal,
  );
}

/**
 * Deletes the nodes' group and the placement group. EC2 refuses both while an instance still uses them
 * (DependencyViolation, InvalidPlacementGroup.InUse): a terminating instance holds them until it is terminated,
 * so the refusal is waited out within the budget; an absent one is already done.
 */
export async function releaseEc2Cluster(send: Send, runId: string, signal?: AbortSignal, budgetMs = 180_000, knownGroupId?: string): Promise<void> {
  await deleteNodesGroup(send, runId, signal, budgetMs, knownGroupId);
  await deleteWhenFree(
    `placement group ${placementGroupName(runId)}`,
    () => send((sdk) => new sdk.DeletePlacementGroupCommand({ GroupName: placementGroupName(runId) }), signal),
    ['InvalidPlacementGroup.Unknown', 'InvalidPlacementGroup.NotFound'],
    ['InvalidPlacementGroup.InUse', 'DependencyViolation'],
    Date.now() + budgetMs,
    signal,
  );
}
