// Client-side settings for talking to a test sshd with our own ssh layer: a private ssh config, known_hosts
// and host-key store in a temp dir, so the tests never read or write the real ~/.ssh.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Sshd } from './sshd';
import type { ConnectOptions } from '../../src/core/ssh/session';

export interface ClientSetup {
  readonly dir: string;
  readonly alias: string;
  readonly sshConfigPath: string;
  readonly knownHostsPath: string;
  readonly options: ConnectOptions;
}

/** An ssh config naming `sshd` as Host `alias`, its key in known_hosts (unless trust is false), no agent. */
/**
 * With `knownHostsInConfig`, the config itself names the known_hosts file (a `Host *` UserKnownHostsFile), for
 * clients that only get the config path: the extension inside VS Code, the demo.
 */
export function clientFor(
  sshd: Sshd,
  opts: {
    alias?: string;
    trust?: boolean;
    extraConfig?: readonly string[];
    options?: Partial<ConnectOptions>;
    knownHostsInConfig?: boolean;
    dir?: string;
    port?: number;
  } = {},
): ClientSetup {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'rft-client-'));
  const alias = opts.alias ?? 'gpu-test';
  const sshConfigPath = join(dir, 'config');
  writeFileSync(
    sshConfigPath,
    [
      `Host ${alias}`,
      '  HostName 127.0.0.1',
      `  Port ${opts.port ?? sshd.port}`,
      `  User ${sshd.user}`,
      `  IdentityFile ${sshd.userKeyPath}`,
      '  IdentitiesOnly yes',
      ...(opts.extraConfig ?? []),
      ...(opts.knownHostsInConfig ? ['Host *', `  UserKnownHostsFile ${join(dir, 'known_hosts')}`] : []),
      '',
    ].join('\n'),
  );
  const knownHostsPath = join(dir, 'known_hosts');
  // Through a proxy (opts.port) the server is known under the proxy's [host]:port too.
  const lines = opts.port ? [sshd.knownHostsLine, sshd.knownHostsLine.replace(`]:${sshd.port} `, `]:${opts.port} `)] : [sshd.knownHostsLine];
  writeFileSync(knownHostsPath, opts.trust === false ? '' : `${lines.join('\n')}\n`);
  return {
    dir,
    alias,
    sshConfigPath,
    knownHostsPath,
    options: {
      sshConfigPath,
      knownHostsFiles: [knownHostsPath],
      hostKeyStore: join(dir, 'rft_known_hosts'),
      agentSocket: null,
      ...(opts.options ?? {}),
    },
  };
}
