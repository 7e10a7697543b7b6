// A multi-node EC2 run's nodes' security group (issue 36.5) against moto in server mode, an implementation of
// EC2's Query API written by others: the group whose ingress admits its own members on every port (a
// UserIdGroupPairs self-reference, as botocore's model of AuthorizeSecurityGroupIngress has it), made again
// without error (the duplicate rule is recognised), the nodes launched into it with a private address for the
// rendezvous, and the group deleted once they are terminated. Checked through moto's own view with the AWS SDK.
// moto 5.2.5 does not implement placement groups (CreatePlacementGroup answers an HTML 500): the cluster
// placement group is checked against the EC2 emulator in matrix.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DescribeInstancesCommand, DescribeSecurityGroupsCommand, DescribeVpcsCommand } from '@aws-sdk/client-ec2';
import type * as Ec2Sdk from '@aws-sdk/client-ec2';
import { deleteNodesGroup, ensureNodesGroup, nodesGroupName } from '../../../src/core/providers/ec2/cluster';
import { RUN_ID_TAG } from '../../../src/core/providers/provider';
import { nodeRequest } from '../../../src/core/runs/lifecycle/clusterLaunch';
import { motoEc2 } from '../../support/motoEc2';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-moto';
const aws = motoEc2();

type Send = <T>(make: (sdk: typeof Ec2Sdk) => object, signal?: AbortSignal) => Promise<T>;

test(
  'moto: the nodes group admits its own members on every port; nodes launch into it with private addresses; it is deleted after them',
  { timeout: 120_000 },
  async () => {
    const ec2 = aws.provider();
    // The provider's own send (SDK errors mapped to ProviderErrors), as prepareCluster passes it.
    const send = (ec2 as unknown as { send: Send }).send.bind(ec2) as Send;
    const once = <T>(_codes: readonly string[], call: () => Promise<T>): Promise<T> => call();
    const runId = 'rft-20261128-020000-clu1';
    const vpcId = (await aws.sdk().send(new DescribeVpcsCommand({ Filters: [{ Name: 'is-default', Values: ['true'] }] }))).Vpcs![0]!.VpcId!;
    const groupId = await ensureNodesGroup(send, once, runId, vpcId);
    assert.equal(await ensureNodesGroup(send, once, runId, vpcId), groupId, 'made again: the same group, the duplicate rule recognised');
    const sg = (await aws.sdk().send(new DescribeSecurityGroupsCommand({ GroupIds: [groupId] }))).SecurityGroups![0]!;
    assert.equal(sg.GroupName, nodesGroupName(runId));
    assert.deepEqual(
      (sg.IpPermissions ?? []).map((p) => [p.IpProtocol, (p.UserIdGroupPairs ?? []).map((u) => u.GroupId), (p.IpRanges ?? []).length]),
      [['-1', [groupId], 0]],
      'every protocol and port, from its own members only, from no address range',
    );

    const base = { runId, instanceType: 'g4dn.12xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB };
    const first = await ec2.launch(nodeRequest(base, 2, 0, undefined));
    const second = await ec2.launch(nodeRequest(base, 2, 1, first.zone));
    assert.notEqual(first.id, second.id, 'each node its own ClientToken');
    const raw = (await aws.sdk().send(new DescribeInstancesCommand({ InstanceIds: [first.id, second.id] }))).Reservations!.flatMap((r) => r.Instances ?? []);
    assert.equal(new Set(raw.map((i) => i.Placement?.AvailabilityZone)).size, 1, 'one zone');
    for (const i of raw) {
      assert.ok(
        (i.SecurityGroups ?? []).some((x) => x.GroupId === groupId),
        `${i.InstanceId} is in the nodes group`,
      );
      assert.equal(i.Tags?.find((t) => t.Key === RUN_ID_TAG)?.Value, runId);
    }
    assert.equal(first.privateIp, raw.find((i) => i.InstanceId === first.id)?.PrivateIpAddress);
    assert.match(first.privateIp ?? '', /^\d+\.\d+\.\d+\.\d+$/, 'a private address for the rendezvous');

    await ec2.terminate(first.id);
    await ec2.terminate(second.id);
    await deleteNodesGroup(send, runId, undefined, 30_000);
    const left = await aws.sdk().send(new DescribeSecurityGroupsCommand({ Filters: [{ Name: 'group-name', Values: [nodesGroupName(runId)] }] }));
    assert.deepEqual(left.SecurityGroups ?? [], [], 'nodes group deleted');
  },
);
