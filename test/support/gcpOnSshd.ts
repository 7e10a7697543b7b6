// A GCP run whose instance is the loopback sshd: the emulator answers the Compute API and reports the sshd's
// host key as the guest's, so provisioning goes on into real SSH. Shared by the cloud-run integration tests.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sshd } from './sshd';
import type { ConnectOptions } from '../../src/core/ssh/session';
import { GcpProvider } from '../../src/core/providers/gcp/instances';
import { serviceAccountTokenSource } from '../../src/core/providers/gcp/auth';
import { GcpEmulator } from '../emulators/gcp';

/** Connect options that trust nothing yet and read no ssh_config of the machine's. */
export function isolatedConnectOptions(prefix: string): ConnectOptions {
  const base = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(base, 'known_hosts'), '');
  return {
    hostKeyStore: join(base, 'store_known_hosts'),
    knownHostsFiles: [join(base, 'known_hosts')],
    agentSocket: null,
    sshConfigPath: join(base, 'no_ssh_config'),
  };
}

/** A started emulator (instances boot in `bootMs`) and a provider whose instances answer SSH as `sshd`. */
export async function gcpOnSshd(sshd: Sshd, bootMs = 1500): Promise<{ emu: GcpEmulator; provider: GcpProvider }> {
  const emu = await new GcpEmulator({ bootMs }).start();
  emu.guestHostKeys = [sshd.knownHostsLine.split(' ').slice(1).join(' ')];
  const key = JSON.parse(emu.serviceAccountJson()) as Parameters<typeof serviceAccountTokenSource>[0];
  const provider = new GcpProvider({
    project: emu.project,
    zone: 'us-central1-a',
    auth: serviceAccountTokenSource(key),
    baseUrl: `${emu.url}/compute/v1`,
    sshPort: sshd.port,
    sshUser: sshd.user,
    operationPollMs: 20,
    callerIp: async () => '203.0.113.9',
  });
  return { emu, provider };
}
