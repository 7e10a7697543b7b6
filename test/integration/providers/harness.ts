// Builds each cloud provider (real client code) wired to its emulator (test double for the cloud), with
// the operation names each emulator uses, so fault cases can be written once for all three.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { Ec2Provider } from '../../../src/core/providers/ec2/instances';
import { GcpProvider } from '../../../src/core/providers/gcp/instances';
import { serviceAccountTokenSource } from '../../../src/core/providers/gcp/auth';
import { LambdaProvider } from '../../../src/core/providers/lambda/instances';
import type { Provider } from '../../../src/core/providers/provider';
import { Ec2Emulator } from '../../emulators/ec2';
import { GcpEmulator } from '../../emulators/gcp';
import { LambdaEmulator } from '../../emulators/lambda';
import type { EmulatorBase, SlowSettings } from '../../emulators/server';
import { opensshArgs } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';

export type CloudKind = 'lambda' | 'ec2' | 'gcp';

export interface CloudRig {
  readonly kind: CloudKind;
  readonly emu: EmulatorBase;
  readonly provider: Provider;
  readonly instanceType: string;
  readonly region: string;
  readonly ops: { readonly launch: string; readonly describe: string; readonly terminate: string; readonly list: string };
  /** Every instance the emulator ever created (GCP drops deleted ones from its live map). */
  launched(): number;
}

export const fastRetry = { retries: 3, baseDelayMs: 5, maxDelayMs: 20, retryServerErrors: true };

/**
 * How long cleanup looks for the instance of a launch of unknown outcome: longer than the emulator's listing
 * lag (else the test would pass by luck), short enough for a suite.
 */
export function consistencyWindowFor(slow: SlowSettings | undefined): number {
  return Math.max(1000, (slow?.listLagSec ?? 0) * 1000 + (slow?.operationSec ?? 0) * 1000 + 1500);
}

export async function makeRig(kind: CloudKind, sshPort: number, requestTimeoutMs = 600, slow?: SlowSettings): Promise<CloudRig> {
  const windowMs = consistencyWindowFor(slow);
  if (kind === 'lambda') {
    const emu = await new LambdaEmulator('k-test', { launchWindowMs: 5, slow }).start();
    const provider = new LambdaProvider({
      apiKey: 'k-test',
      baseUrl: `${emu.url}/api/v1`,
      launchMinIntervalMs: 5,
      retry: fastRetry,
      requestTimeoutMs,
      sshPort,
      consistencyWindowMs: windowMs,
    });
    return {
      kind,
      emu,
      provider,
      instanceType: 'gpu_1x_a100',
      region: 'us-east-1',
      ops: { launch: 'launch', describe: 'describe', terminate: 'terminate', list: 'list-instances' },
      launched: () => emu.instances.size,
    };
  }
  if (kind === 'ec2') {
    process.env.AWS_ACCESS_KEY_ID ??= 'AKIAEMULATOR000000';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'emulator-secret';
    const emu = await new Ec2Emulator({ slow }).start();
    const provider = new Ec2Provider({
      region: 'us-east-1',
      endpoint: emu.url,
      maxAttempts: 3,
      requestTimeoutMs,
      callerIp: async () => '198.51.100.4',
      sshPort,
      consistency: { baseMs: 10, maxMs: 100, windowMs: Math.max(3000, windowMs) },
    });
    return {
      kind,
      emu,
      provider,
      instanceType: 'g5.xlarge',
      region: 'us-east-1',
      ops: { launch: 'RunInstances', describe: 'DescribeInstances', terminate: 'TerminateInstances', list: 'DescribeInstances' },
      launched: () => emu.instances.size,
    };
  }
  const emu = await new GcpEmulator({ slow }).start();
  const key = JSON.parse(emu.serviceAccountJson()) as Parameters<typeof serviceAccountTokenSource>[0];
  const provider = new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth: serviceAccountTokenSource(key),
    baseUrl: `${emu.url}/compute/v1`,
    sshPort,
    retry: fastRetry,
    requestTimeoutMs,
    operationPollMs: 10,
    operationTimeoutMs: 5000,
    consistencyWindowMs: windowMs,
    callerIp: async () => '198.51.100.4',
  });
  return {
    kind,
    emu,
    provider,
    instanceType: 'g2-standard-8',
    region: 'us-central1',
    ops: { launch: 'insert', describe: 'get', terminate: 'delete', list: 'aggregated' },
    launched: () => emu.instances.size + emu.gone.length,
  };
}

/** A real OpenSSH login to the emulated instance's address (the loopback sshd): what bootstrap would do first. */
export function sshLogin(sshd: Sshd, host: string, port: number, command: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'rft-kh-'));
  const kh = join(dir, 'known_hosts');
  writeFileSync(kh, `${sshd.knownHostsLine}\n`);
  const args = opensshArgs(sshd, kh);
  const i = args.indexOf('-p');
  if (i >= 0) args[i + 1] = String(port);
  return new Promise((resolve, reject) => {
    execFile('ssh', [...args, `${sshd.user}@${host}`, command], { timeout: 15_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`ssh: ${stderr || err.message}`)) : resolve(stdout),
    );
  });
}
