// The EC2 provider (real @aws-sdk/client-ec2) and the teardown guard against moto's EC2 (an implementation by
// others, PyPI moto[server]) behind a fault-injecting proxy (test/support/faultProxy.ts): answers lost after
// RunInstances happened, Stop pressed while RunInstances is in flight, and the listing lag moto lacks. Each
// case ends by asking moto itself (not through the proxy, not through our provider) what is still running.
// moto 5.2.5 has no ClientToken idempotency (a retried RunInstances makes another instance) and no
// `client-token` filter (it answers 500): cleanup must still find everything by the run tag.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DescribeInstancesCommand } from '@aws-sdk/client-ec2';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { ProviderError, RUN_ID_TAG } from '../../../src/core/providers/provider';
import { provisionGuarded, ProvisionError } from '../../../src/core/runs/lifecycle/teardown';
import { FaultProxy } from '../../support/faultProxy';
import { motoEc2 } from '../../support/motoEc2';
import { SpyLedger } from '../../support/spyLedger';

const PUB = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl rft-moto-faults';
/** Longer than the abort below and than the SDK's retries: the old single listing saw nothing. */
const LAG_MS = 1500;
const aws = motoEc2();

function providerVia(proxy: FaultProxy): Ec2Provider {
  return new Ec2Provider({
    region: 'us-east-1',
    endpoint: proxy.url,
    maxAttempts: 2,
    requestTimeoutMs: 10_000,
    callerIp: async () => '203.0.113.10',
    // moto's AMI list holds "Deep Learning AMI Amazon Linux - 3.3_Oct2017" and no current DLAMI names.
    amiNamePattern: 'Deep Learning AMI*',
    consistency: { baseMs: 20, maxMs: 200, windowMs: LAG_MS + 1500 },
  });
}

/** What moto itself says is still running (or stopped, its disk billing) for the run. */
async function billingInMoto(runId: string): Promise<string[]> {
  const r = await aws.sdk().send(
    new DescribeInstancesCommand({
      Filters: [
        { Name: `tag:${RUN_ID_TAG}`, Values: [runId] },
        { Name: 'instance-state-name', Values: ['pending', 'running', 'stopping', 'stopped'] },
      ],
    }),
  );
  return (r.Reservations ?? []).flatMap((x) => x.Instances ?? []).map((i) => `${i.InstanceId ?? ''} ${i.State?.Name ?? ''}`);
}

async function launchedInMoto(runId: string): Promise<number> {
  const r = await aws.sdk().send(new DescribeInstancesCommand({ Filters: [{ Name: `tag:${RUN_ID_TAG}`, Values: [runId] }] }));
  return (r.Reservations ?? []).flatMap((x) => x.Instances ?? []).length;
}

function request(runId: string): Parameters<typeof provisionGuarded>[0]['request'] {
  return { runId, instanceType: 'g4dn.xlarge', region: 'us-east-1', spot: false, sshPublicKey: PUB };
}

test('moto behind a proxy: every answer to RunInstances lost → launch-unknown, cleanup finds what moto made, 0 running', { timeout: 120_000 }, async () => {
  const proxy = await new FaultProxy(aws.moto().url, LAG_MS).start();
  const runId = 'rft-20261127-210000-mf01';
  const ledger = new SpyLedger(join(mkdtempSync(join(tmpdir(), 'rft-mf-')), 'ledger.json'));
  try {
    proxy.inject('RunInstances', { kind: 'drop-after' }, 10);
    await assert.rejects(
      provisionGuarded({ provider: providerVia(proxy), ledger, request: request(runId), sshTimeoutMs: 1000, cleanupTimeoutMs: 20_000 }),
      (e: unknown) => e instanceof ProvisionError && e.step === 'launch' && e.cleanedUp,
    );
    assert.ok((await launchedInMoto(runId)) >= 1, 'the lost answers hid launches that happened');
    assert.deepEqual(await billingInMoto(runId), []);
    assert.deepEqual(ledger.states.slice(-2), ['launch-unknown', 'terminated']);
  } finally {
    await proxy.stop();
  }
});

test('moto behind a proxy: Stop pressed while RunInstances is in flight → cleanup waits out the lag, 0 running', { timeout: 120_000 }, async () => {
  const proxy = await new FaultProxy(aws.moto().url, LAG_MS).start();
  const runId = 'rft-20261127-210000-mf02';
  const ledger = new SpyLedger(join(mkdtempSync(join(tmpdir(), 'rft-mf-')), 'ledger.json'));
  const stop = new AbortController();
  try {
    proxy.inject('RunInstances', { kind: 'hold-answer', ms: 5000 });
    // Stop lands once moto has made the instance and its answer is on the way.
    proxy.onUpstreamAnswer = (action) => {
      if (action === 'RunInstances') setTimeout(() => stop.abort(), 50);
    };
    await assert.rejects(
      provisionGuarded({ provider: providerVia(proxy), ledger, request: request(runId), sshTimeoutMs: 1000, cleanupTimeoutMs: 20_000, signal: stop.signal }),
      (e: unknown) => e instanceof ProvisionError && e.step === 'launch' && e.cause instanceof ProviderError && e.cause.code === 'aborted' && e.cleanedUp,
    );
    assert.equal(await launchedInMoto(runId), 1);
    assert.deepEqual(await billingInMoto(runId), []);
    assert.deepEqual(ledger.states.slice(-2), ['launch-unknown', 'terminated']);
  } finally {
    await proxy.stop();
  }
});
