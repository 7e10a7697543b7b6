// Where an EC2 instance goes and how it is reached: the VPC and subnet, the key pair, and a security group that
// opens SSH to the caller's address only.
import { createHash } from 'node:crypto';
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import { callerIpv4 } from '../callerIp';
import { OWNER_TAG, ProviderError } from '../provider';
import { awsCode } from './cluster';
import type { Ec2Api } from './api';

/** Key pair named after the key's hash: importing the same key twice reuses it. */
export async function ensureKeyPair(api: Ec2Api, publicKey: string, signal?: AbortSignal): Promise<string> {
  const material = publicKey.trim();
  const name = `remote-finetune-${createHash('sha256').update(material.split(/\s+/).slice(0, 2).join(' ')).digest('hex').slice(0, 16)}`;
  try {
    const found = await api.send<{ KeyPairs?: unknown[] }>((sdk) => new sdk.DescribeKeyPairsCommand({ KeyNames: [name] }), signal);
    if ((found.KeyPairs ?? []).length > 0) return name;
  } catch (err) {
    if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
  }
  try {
    await api.send(
      (sdk) =>
        new sdk.ImportKeyPairCommand({
          KeyName: name,
          PublicKeyMaterial: new TextEncoder().encode(material),
          TagSpecifications: [{ ResourceType: 'key-pair', Tags: [{ Key: OWNER_TAG, Value: 'true' }] }],
        }),
      signal,
    );
  } catch (err) {
    // DescribeKeyPairs lagged behind an earlier import of the same key: it is there.
    if (awsCode(err) !== 'InvalidKeyPair.Duplicate') throw err;
  }
  return name;
}

/**
 * A security group that opens 22 only to the caller's address, one per address. A group found by name is
 * checked, not trusted: a launch cut short between CreateSecurityGroup and AuthorizeSecurityGroupIngress
 * (or a hand edit) leaves one with no rule for 22, or with more than ours; the rule is added and anything
 * else revoked before an instance uses it.
 */
export async function ensureSecurityGroup(api: Ec2Api, vpcId: string, signal?: AbortSignal): Promise<string> {
  const ip = await callerIpv4('ec2', api.options.callerIp, signal);
  const groupName = `remote-finetune-ssh-${ip.replace(/\./g, '-')}`;
  const cidr = `${ip}/32`;
  // Group names are unique per VPC: the one found must live in the VPC the instance goes to.
  const byName = [
    { Name: 'group-name', Values: [groupName] },
    { Name: 'vpc-id', Values: [vpcId] },
  ];
  const existing = await api.send<{ SecurityGroups?: Ec2Sdk.SecurityGroup[] }>((sdk) => new sdk.DescribeSecurityGroupsCommand({ Filters: byName }), signal);
  let group = existing.SecurityGroups?.[0];
  let id = group?.GroupId;
  if (!id) {
    try {
      const created = await api.send<{ GroupId?: string }>(
        (sdk) =>
          new sdk.CreateSecurityGroupCommand({
            GroupName: groupName,
            VpcId: vpcId,
            Description: `Remote Fine-Tune: SSH from ${ip} only`,
            TagSpecifications: [{ ResourceType: 'security-group', Tags: [{ Key: OWNER_TAG, Value: 'true' }] }],
          }),
        signal,
      );
      id = created.GroupId;
      group = undefined;
    } catch (err) {
      // Created a moment ago (by us, a retry, another window) and not yet visible to DescribeSecurityGroups.
      if (awsCode(err) !== 'InvalidGroup.Duplicate') throw err;
      const again = await api.untilConsistent(
        ['InvalidGroup.NotFound'],
        async () => {
          const r = await api.send<{ SecurityGroups?: Ec2Sdk.SecurityGroup[] }>((sdk) => new sdk.DescribeSecurityGroupsCommand({ Filters: byName }), signal);
          if (!r.SecurityGroups?.[0]?.GroupId) throw new ProviderError('not-found', `InvalidGroup.NotFound: ${groupName} not visible yet`, 'ec2');
          return r.SecurityGroups[0];
        },
        signal,
      );
      group = again;
      id = again.GroupId;
    }
    if (!id) throw new ProviderError('server', 'CreateSecurityGroup returned no id', 'ec2');
  }
  const groupId = id;
  const perms = group?.IpPermissions ?? [];
  const ours = (p: Ec2Sdk.IpPermission): boolean => p.IpProtocol === 'tcp' && p.FromPort === 22 && p.ToPort === 22;
  const hasRule = perms.some((p) => ours(p) && (p.IpRanges ?? []).some((r) => r.CidrIp === cidr));
  // Anything but tcp/22 from our /32: other ports, other ranges, IPv6, prefix lists, other groups.
  const extra: Ec2Sdk.IpPermission[] = [];
  for (const p of perms) {
    const ranges = (p.IpRanges ?? []).filter((r) => !(ours(p) && r.CidrIp === cidr));
    const others = (p.Ipv6Ranges?.length ?? 0) + (p.PrefixListIds?.length ?? 0) + (p.UserIdGroupPairs?.length ?? 0);
    if (ranges.length || others) extra.push({ ...p, IpRanges: ranges });
  }
  if (extra.length) {
    await api.untilConsistent(
      ['InvalidGroup.NotFound'],
      () => api.send((sdk) => new sdk.RevokeSecurityGroupIngressCommand({ GroupId: groupId, IpPermissions: extra })),
      signal,
    );
  }
  if (!hasRule) {
    // Right after CreateSecurityGroup the new id may be unknown to the next call (InvalidGroup.NotFound).
    await api.untilConsistent(
      ['InvalidGroup.NotFound'],
      async () => {
        try {
          await api.send(
            (sdk) =>
              new sdk.AuthorizeSecurityGroupIngressCommand({
                GroupId: groupId,
                IpPermissions: [{ IpProtocol: 'tcp', FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: cidr, Description: 'Remote Fine-Tune SSH' }] }],
              }),
            signal,
          );
        } catch (err) {
          // An earlier attempt whose answer was lost already added it.
          if (awsCode(err) !== 'InvalidPermission.Duplicate') throw err;
        }
      },
      signal,
    );
  }
  return groupId;
}

/**
 * Where the instance goes. With a default VPC: there, as EC2 places a launch that names no subnet (its
 * subnets are public by construction). Without one (deleted, or an account that never had it), EC2 refuses
 * such a launch (VPCIdNotSpecified), so a subnet is picked here: public (its route table, or its VPC's main
 * table, sends 0.0.0.0/0 to an internet gateway; SSH from here cannot reach anything else), in a zone that
 * offers the type, the requested zone when there is one. None: a clear error naming what to create.
 */
export async function network(
  api: Ec2Api,
  instanceType: string,
  zone: string | undefined,
  signal?: AbortSignal,
): Promise<{ vpcId: string; subnetId?: string }> {
  const vpcs = await api.send<{ Vpcs?: Ec2Sdk.Vpc[] }>((sdk) => new sdk.DescribeVpcsCommand({ Filters: [{ Name: 'is-default', Values: ['true'] }] }), signal);
  const def = vpcs.Vpcs?.find((v) => v.IsDefault && v.VpcId);
  if (def?.VpcId) return { vpcId: def.VpcId };
  const region = api.options.region;
  const subnets =
    (await api.send<{ Subnets?: Ec2Sdk.Subnet[] }>((sdk) => new sdk.DescribeSubnetsCommand({ Filters: [{ Name: 'state', Values: ['available'] }] }), signal))
      .Subnets ?? [];
  const vpcIds = [...new Set(subnets.map((x) => x.VpcId).filter((x): x is string => !!x))];
  const tables = vpcIds.length
    ? ((
        await api.send<{ RouteTables?: Ec2Sdk.RouteTable[] }>(
          (sdk) => new sdk.DescribeRouteTablesCommand({ Filters: [{ Name: 'vpc-id', Values: vpcIds }] }),
          signal,
        )
      ).RouteTables ?? [])
    : [];
  const tableOf = (sub: Ec2Sdk.Subnet): Ec2Sdk.RouteTable | undefined =>
    tables.find((t) => (t.Associations ?? []).some((a) => a.SubnetId === sub.SubnetId)) ??
    tables.find((t) => t.VpcId === sub.VpcId && (t.Associations ?? []).some((a) => a.Main));
  const isPublic = (sub: Ec2Sdk.Subnet): boolean =>
    (tableOf(sub)?.Routes ?? []).some((r) => r.DestinationCidrBlock === '0.0.0.0/0' && (r.GatewayId ?? '').startsWith('igw-'));
  const publicSubnets = subnets.filter((x) => x.SubnetId && x.AvailabilityZone && isPublic(x));
  const offered = await api.send<{ InstanceTypeOfferings?: Array<{ Location?: string }> }>(
    (sdk) => new sdk.DescribeInstanceTypeOfferingsCommand({ LocationType: 'availability-zone', Filters: [{ Name: 'instance-type', Values: [instanceType] }] }),
    signal,
  );
  const zones = new Set((offered.InstanceTypeOfferings ?? []).map((o) => o.Location));
  const fits = publicSubnets.filter((x) => zones.has(x.AvailabilityZone) && (!zone || x.AvailabilityZone === zone));
  // Subnets that hand out public addresses themselves first, then a stable order.
  const best = fits.sort(
    (a, b) =>
      Number(b.MapPublicIpOnLaunch ?? false) - Number(a.MapPublicIpOnLaunch ?? false) ||
      (a.AvailabilityZone ?? '').localeCompare(b.AvailabilityZone ?? '') ||
      (a.SubnetId ?? '').localeCompare(b.SubnetId ?? ''),
  )[0];
  if (best?.SubnetId && best.VpcId) return { vpcId: best.VpcId, subnetId: best.SubnetId };
  const fix = `create a default VPC (\`aws ec2 create-default-vpc --region ${region}\`) or a public subnet (a route 0.0.0.0/0 to an internet gateway) in a zone that offers ${instanceType}, then retry`;
  if (publicSubnets.length === 0)
    throw new ProviderError(
      'invalid',
      `no default VPC in ${region} and no public subnet (none of its ${subnets.length} subnet(s) routes 0.0.0.0/0 to an internet gateway): ${fix}`,
      'ec2',
    );
  const where = [...new Set(publicSubnets.map((x) => x.AvailabilityZone))].join(', ');
  throw new ProviderError(
    'invalid',
    `no default VPC in ${region}, and its public subnets (${where}) are not in a zone that offers ${instanceType}${zone ? ` in ${zone}` : ''} (${[...zones].join(', ') || 'none'}): ${fix}`,
    'ec2',
  );
}
