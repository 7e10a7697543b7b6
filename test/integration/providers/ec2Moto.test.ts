// The EC2 provider (real @aws-sdk/client-ec2) against moto in server mode: an implementation of EC2's Query
// API written by others (PyPI moto[server]), started here on loopback, so what our own emulator gets wrong about
// EC2 cannot hide a client bug. Checked through moto's own view of the account (DescribeSecurityGroups,
// DescribeKeyPairs, DescribeInstanceAttribute, DescribeVolumes with the same SDK), not through our provider. The
// AMI lookup goes through moto's SSM (GetParameters) with the real @aws-sdk/client-ssm.
// moto 5.2.5 does not implement: RunInstances ClientToken idempotency, eventual consistency, capacity errors,
// throttling; those are covered by the EC2 emulator (ec2.test.ts) and the fault matrix.
// Writes .test-output/providers-moto.json (version, passed, failed) for scripts/test-providers.mjs.
import { test, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SSMClient, PutParameterCommand } from '@aws-sdk/client-ssm';
import {
  AssociateRouteTableCommand,
  AttachInternetGatewayCommand,
  CreateInternetGatewayCommand,
  CreateRouteCommand,
  CreateRouteTableCommand,
  CreateSubnetCommand,
  CreateVpcCommand,
  DeleteSubnetCommand,
  DeleteVpcCommand,
  DescribeSubnetsCommand,
  DescribeVpcsCommand,
} from '@aws-sdk/client-ec2';
import {
  DescribeImagesCommand,
  DescribeInstanceAttributeCommand,
  DescribeInstancesCommand,
  DescribeKeyPairsCommand,
  DescribeSecurityGroupsCommand,
  DescribeVolumesCommand,
  AuthorizeSecurityGroupIngressCommand,
  CreateSecurityGroupCommand,
  EC2Client,
} from '@aws-sdk/client-ec2';
import type { Instance as Ec2Instance } from '@aws-sdk/client-ec2';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { OWNER_TAG, ProviderError, RUN_ID_TAG } from '../../../src/core/providers/provider';
import { motoEc2 } from '../../support/motoEc2';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-moto';
const CALLER = '203.0.113.9';
const aws = motoEc2();
const tally = { passed: 0, failed: 0 };

afterEach((t) => {
  // node:test gives the context; a failed assertion has already marked it.
  const ctx = t as unknown as { passed?: boolean };
  if (ctx.passed === false) tally.failed++;
  else tally.passed++;
});

after(async () => {
  // moto itself is stopped by motoEc2's own after hook.
  const out = process.env.RFT_MOTO_REPORT ?? join('.test-output', 'providers-moto.json');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify({ version: (aws.moto() as { version?: string } | undefined)?.version ?? 'unavailable', ...tally }));
});

function provider(region = 'us-east-1'): Ec2Provider {
  // moto's AMI list holds "Deep Learning AMI Amazon Linux - 3.3_Oct2017" and no current DLAMI names.
  return new Ec2Provider({
    region,
    endpoint: aws.moto().url,
    maxAttempts: 2,
    requestTimeoutMs: 10_000,
    callerIp: async () => CALLER,
    amiNamePattern: 'Deep Learning AMI*',
    consistency: { baseMs: 10, maxMs: 50, windowMs: 1000 },
  });
}

async function raw(id: string): Promise<Ec2Instance> {
  const r = await aws.sdk().send(new DescribeInstancesCommand({ InstanceIds: [id] }));
  return r.Reservations![0]!.Instances![0]!;
}

test('moto: offers for T4 list on-demand and spot (DescribeInstanceTypeOfferings, DescribeSpotPriceHistory)', async () => {
  const offers = await provider().listOffers({ gpu: 'T4' });
  assert.ok(offers.some((o) => !o.spot && o.instanceType === 'g4dn.xlarge'));
  assert.ok(
    offers.some((o) => o.spot && o.instanceType === 'g4dn.xlarge' && o.pricePerHour > 0 && o.zone),
    JSON.stringify(offers.filter((o) => o.spot)),
  );
});

test('moto: launch imports the key, opens 22 to the caller /32 only, tags instance and volume, IMDSv2, encrypted root, host key in user-data', async () => {
  const p = provider();
  const hostKey = {
    type: 'ssh-ed25519',
    privatePem: '-----BEGIN OPENSSH PRIVATE KEY-----\nx\n-----END OPENSSH PRIVATE KEY-----\n',
    publicLine: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBogus host',
  };
  const inst = await p.launch({
    runId: 'rft-20261121-150000-mot1',
    instanceType: 'g4dn.xlarge',
    region: 'us-east-1',
    spot: false,
    sshPublicKey: PUB,
    diskGiB: 150,
    hostKey: hostKey as never,
  });
  const i = await raw(inst.id);
  const tags = new Map((i.Tags ?? []).map((t) => [t.Key, t.Value]));
  assert.equal(tags.get(RUN_ID_TAG), 'rft-20261121-150000-mot1');
  assert.equal(tags.get(OWNER_TAG), 'true');
  assert.equal(tags.get('Name'), 'rft-20261121-150000-mot1');
  const keys = await aws.sdk().send(new DescribeKeyPairsCommand({ KeyNames: [i.KeyName!] }));
  assert.equal(keys.KeyPairs?.length, 1);
  const groups = await aws.sdk().send(new DescribeSecurityGroupsCommand({ GroupIds: (i.SecurityGroups ?? []).map((g) => g.GroupId!) }));
  const ingress = groups.SecurityGroups!.flatMap((g) => g.IpPermissions ?? []);
  assert.deepEqual(
    ingress.map((x) => [x.IpProtocol, x.FromPort, x.ToPort, (x.IpRanges ?? []).map((r) => r.CidrIp)]),
    [['tcp', 22, 22, [`${CALLER}/32`]]],
  );
  assert.equal(i.MetadataOptions?.HttpTokens, 'required', 'IMDSv2 only');
  const vols = await aws.sdk().send(new DescribeVolumesCommand({ Filters: [{ Name: 'attachment.instance-id', Values: [inst.id] }] }));
  assert.equal(vols.Volumes?.[0]?.Size, 150);
  assert.equal(vols.Volumes?.[0]?.Encrypted, true, 'root volume encrypted');
  const ud = await aws.sdk().send(new DescribeInstanceAttributeCommand({ InstanceId: inst.id, Attribute: 'userData' }));
  assert.match(Buffer.from(ud.UserData?.Value ?? '', 'base64').toString('utf8'), /ssh_keys:|ssh-ed25519/);
  await p.terminate(inst.id);
});

test('moto: spot launch is described as spot; listOwned finds running and stopped, never terminated', async () => {
  const p = provider();
  const spot = await p.launch({ runId: 'rft-20261121-150000-mot2', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: true, sshPublicKey: PUB });
  assert.equal((await p.describe(spot.id))?.spot, true);
  const od = await p.launch({ runId: 'rft-20261121-150000-mot3', instanceType: 'g5.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
  await p.stop(od.id);
  const owned = await p.listOwned();
  assert.deepEqual(
    owned.filter((o) => o.id === od.id).map((o) => o.state),
    ['stopped'],
    'a stopped instance is still ours (its disk bills)',
  );
  assert.ok(owned.some((o) => o.id === spot.id));
  await p.terminate(spot.id);
  await p.terminate(od.id);
  assert.equal((await p.describe(od.id))?.state, 'terminated');
  const left = (await p.listOwned()).filter((o) => o.id === od.id || o.id === spot.id);
  assert.deepEqual(left, []);
});

test('moto: the second launch reuses the key pair and the security group', async () => {
  const p = provider();
  const a = await p.launch({ runId: 'rft-20261121-150000-mot4', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
  const b = await p.launch({ runId: 'rft-20261121-150000-mot5', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
  const ra = await raw(a.id);
  const rb = await raw(b.id);
  assert.equal(ra.KeyName, rb.KeyName);
  assert.deepEqual(
    ra.SecurityGroups?.map((g) => g.GroupId),
    rb.SecurityGroups?.map((g) => g.GroupId),
  );
  await p.terminate(a.id);
  await p.terminate(b.id);
});

test('moto: a reused group opened to the world is narrowed to the caller before use', async () => {
  const ip = '198.51.100.77';
  const g = await aws.sdk().send(new CreateSecurityGroupCommand({ GroupName: `remote-finetune-ssh-${ip.replace(/\./g, '-')}`, Description: 'left behind' }));
  await aws.sdk().send(
    new AuthorizeSecurityGroupIngressCommand({
      GroupId: g.GroupId,
      IpPermissions: [
        { IpProtocol: 'tcp', FromPort: 22, ToPort: 22, IpRanges: [{ CidrIp: '0.0.0.0/0' }] },
        { IpProtocol: 'tcp', FromPort: 8888, ToPort: 8888, IpRanges: [{ CidrIp: `${ip}/32` }] },
      ],
    }),
  );
  const p = new Ec2Provider({
    region: 'us-east-1',
    endpoint: aws.moto().url,
    callerIp: async () => ip,
    amiNamePattern: 'Deep Learning AMI*',
    consistency: { baseMs: 10, windowMs: 1000 },
  });
  const inst = await p.launch({ runId: 'rft-20261121-150000-mot6', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
  const after = await aws.sdk().send(new DescribeSecurityGroupsCommand({ GroupIds: [g.GroupId!] }));
  const rules = after.SecurityGroups![0]!.IpPermissions ?? [];
  assert.deepEqual(
    rules.map((x) => [x.IpProtocol, x.FromPort, x.ToPort, (x.IpRanges ?? []).map((r) => r.CidrIp)]),
    [['tcp', 22, 22, [`${ip}/32`]]],
  );
  assert.deepEqual(
    (await raw(inst.id)).SecurityGroups?.map((x) => x.GroupId),
    [g.GroupId],
  );
  await p.terminate(inst.id);
});

test("moto: the image comes from an SSM parameter (GetParameters on moto's SSM), confirmed with DescribeImages; the default DLAMI parameters, absent from moto, fall back to DescribeImages", async () => {
  // moto holds no /aws/service/deeplearning parameters and refuses to create names under /aws (as AWS does),
  // so the parameter path is the provider's option here; the lookup and the wire are the real ones.
  const images = await aws.sdk().send(new DescribeImagesCommand({ Owners: ['amazon'], Filters: [{ Name: 'name', Values: ['Deep Learning AMI*'] }] }));
  const dl = images.Images?.[0]?.ImageId;
  assert.ok(dl, 'moto lists a Deep Learning AMI');
  const ssm = new SSMClient({ region: 'us-east-1', endpoint: aws.moto().url });
  await ssm.send(new PutParameterCommand({ Name: '/rft-test/dlami/latest/ami-id', Value: dl, Type: 'String', DataType: 'aws:ec2:image', Overwrite: true }));
  const viaSsm = new Ec2Provider({
    region: 'us-east-1',
    endpoint: aws.moto().url,
    callerIp: async () => CALLER,
    amiParameters: ['/rft-test/none/latest/ami-id', '/rft-test/dlami/latest/ami-id'],
    amiNamePattern: 'No Such DLAMI *',
    consistency: { baseMs: 10, windowMs: 1000 },
  });
  const a = await viaSsm.launch({ runId: 'rft-20261121-150000-mot8', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
  assert.equal((await raw(a.id)).ImageId, dl);
  assert.equal(viaSsm.amiSource, 'SSM /rft-test/dlami/latest/ami-id');
  await viaSsm.terminate(a.id);
  const fallback = provider();
  const b = await fallback.launch({ runId: 'rft-20261121-150000-mot9', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB });
  assert.match(fallback.amiSource ?? '', /^DescribeImages/);
  assert.equal((await raw(b.id)).ImageId, dl);
  await fallback.terminate(b.id);
});

test('moto: an account without a default VPC: a clear refusal while no subnet is public; once one routes to an internet gateway, the launch goes there with its group in that VPC', async () => {
  // A region of its own, so the other cases keep moto's default VPC.
  const region = 'eu-west-3';
  const ec2 = new EC2Client({ region, endpoint: aws.moto().url });
  for (const v of (await ec2.send(new DescribeVpcsCommand({ Filters: [{ Name: 'is-default', Values: ['true'] }] }))).Vpcs ?? []) {
    for (const sub of (await ec2.send(new DescribeSubnetsCommand({ Filters: [{ Name: 'vpc-id', Values: [v.VpcId!] }] }))).Subnets ?? [])
      await ec2.send(new DeleteSubnetCommand({ SubnetId: sub.SubnetId }));
    await ec2.send(new DeleteVpcCommand({ VpcId: v.VpcId }));
  }
  const vpc = (await ec2.send(new CreateVpcCommand({ CidrBlock: '10.20.0.0/16' }))).Vpc!.VpcId!;
  const subnet = (await ec2.send(new CreateSubnetCommand({ VpcId: vpc, CidrBlock: '10.20.1.0/24', AvailabilityZone: `${region}a` }))).Subnet!.SubnetId!;
  const p = provider(region);
  await assert.rejects(
    p.launch({ runId: 'rft-20261121-150000-motA', instanceType: 'g4dn.xlarge', region, spot: false, sshPublicKey: PUB }),
    (e: unknown) => e instanceof ProviderError && e.code === 'invalid' && /create-default-vpc/.test(e.message),
  );
  assert.deepEqual(await p.listOwned(), []);
  const igw = (await ec2.send(new CreateInternetGatewayCommand({}))).InternetGateway!.InternetGatewayId!;
  await ec2.send(new AttachInternetGatewayCommand({ InternetGatewayId: igw, VpcId: vpc }));
  const rt = (await ec2.send(new CreateRouteTableCommand({ VpcId: vpc }))).RouteTable!.RouteTableId!;
  await ec2.send(new CreateRouteCommand({ RouteTableId: rt, DestinationCidrBlock: '0.0.0.0/0', GatewayId: igw }));
  await ec2.send(new AssociateRouteTableCommand({ RouteTableId: rt, SubnetId: subnet }));
  const inst = await p.launch({ runId: 'rft-20261121-150000-motB', instanceType: 'g4dn.xlarge', region, spot: false, sshPublicKey: PUB });
  const i = (await ec2.send(new DescribeInstancesCommand({ InstanceIds: [inst.id] }))).Reservations![0]!.Instances![0]!;
  assert.equal(i.SubnetId, subnet);
  assert.equal(i.VpcId, vpc);
  assert.ok(i.PublicIpAddress, 'a public address was asked for');
  const groups = await ec2.send(new DescribeSecurityGroupsCommand({ GroupIds: (i.SecurityGroups ?? []).map((g) => g.GroupId!) }));
  // moto lists the VPC's default group beside ours on a network-interface launch; both live in the chosen VPC.
  assert.ok(
    (groups.SecurityGroups ?? []).every((g) => g.VpcId === vpc),
    JSON.stringify(groups.SecurityGroups?.map((g) => [g.GroupName, g.VpcId])),
  );
  assert.ok((groups.SecurityGroups ?? []).some((g) => g.GroupName === `remote-finetune-ssh-${CALLER.replace(/\./g, '-')}`));
  await p.terminate(inst.id);
});

test('moto: unknown ids: describe is undefined, terminate of an id EC2 never had resolves (InvalidInstanceID.NotFound, not launched here)', async () => {
  const p = provider();
  assert.equal(await p.describe('i-0123456789abcdef0'), undefined);
  await p.terminate('i-0123456789abcdef0');
});

test('moto: no image matching the DLAMI name in the region is a clear not-found, and nothing is launched', async () => {
  const p = new Ec2Provider({
    region: 'us-east-1',
    endpoint: aws.moto().url,
    callerIp: async () => CALLER,
    amiNamePattern: 'No Such DLAMI *',
    consistency: { baseMs: 10, windowMs: 1000 },
  });
  const before = (await p.listOwned()).length;
  await assert.rejects(
    p.launch({ runId: 'rft-20261121-150000-mot7', instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB }),
    (e: unknown) => e instanceof ProviderError && e.code === 'not-found' && /Deep Learning AMI|No Such DLAMI/.test(e.message),
  );
  assert.equal((await p.listOwned()).length, before);
});
