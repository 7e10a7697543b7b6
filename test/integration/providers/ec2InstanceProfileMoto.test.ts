// target.iam_instance_profile (issue 35.4) through the real @aws-sdk/client-ec2 against moto in server mode (an
// implementation of EC2 and IAM written by others, PyPI moto[server]): the profile is made in moto's IAM with
// boto3 from moto's own venv, the provider's RunInstances names it, and moto's DescribeInstances shows the
// instance associated with that profile's ARN (by name and by ARN). moto resolves the profile in its IAM, so a
// request shape it did not understand would leave the instance without one.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { motoEc2 } from '../../support/motoEc2';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-moto';
let profileArn = '';
// The instance profile is made with boto3 against moto's IAM, as the user's account would hold it.
const aws = motoEc2((moto) => {
  const venv = execFileSync('bash', [join(__dirname, '..', '..', '..', 'scripts', 'ensure-moto.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  profileArn = execFileSync(
    join(venv, 'bin', 'python'),
    [
      '-c',
      'import boto3,sys; iam=boto3.client("iam",endpoint_url=sys.argv[1],region_name="us-east-1",aws_access_key_id="testing",aws_secret_access_key="testing"); print(iam.create_instance_profile(InstanceProfileName="rft-s3")["InstanceProfile"]["Arn"])',
      moto.url,
    ],
    { encoding: 'utf8' },
  ).trim();
});
const provider = aws.provider;

test('moto: RunInstances carries target.iam_instance_profile by name or ARN, and the instance runs as that profile', async () => {
  assert.match(profileArn, /^arn:aws:iam::\d+:instance-profile\/rft-s3$/);
  const sdk = aws.sdk();
  const p = provider();
  for (const [n, iamInstanceProfile] of [
    [1, 'rft-s3'],
    [2, profileArn],
  ] as const) {
    const inst = await p.launch({
      runId: `rft-20261127-213000-ip0${n}`,
      instanceType: 'g4dn.xlarge',
      region: 'us-east-1',
      spot: false,
      sshPublicKey: PUB,
      iamInstanceProfile,
    });
    const raw = (await sdk.send(new DescribeInstancesCommand({ InstanceIds: [inst.id] }))).Reservations![0]!.Instances![0]!;
    assert.equal(raw.IamInstanceProfile?.Arn, profileArn, `launched with ${iamInstanceProfile}`);
    await p.terminate(inst.id);
  }
});
