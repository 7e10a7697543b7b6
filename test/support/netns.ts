// Several "hosts" with their own addresses on this one machine (recipe: ../shared/TESTBED.md): a network
// namespace per host, each with lo up and a veth pair whose inner end is eth0 with 10.213.<net>.<i>/24, the
// outer ends on a bridge that holds .254, so the hosts reach each other and this machine reaches them; all
// traffic stays on this machine. Needs root and iproute2; made and removed by the test that uses it.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';

export interface NetnsHost {
  /** The namespace's name (for `ip netns exec`). */
  readonly name: string;
  /** Its eth0 address, which the other hosts and this machine reach it at. */
  readonly address: string;
}

export interface NetnsLan {
  readonly hosts: readonly NetnsHost[];
  /** The interface name inside every namespace (GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME). */
  readonly ifname: 'eth0';
  /** Deletes the namespaces and the bridge; stop every process inside first (a namespace lives while they do). */
  remove(): void;
}

/** Why namespaces cannot be made here, or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root (ip netns add); this test runs as a regular user';
  if (!['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'].some((p) => existsSync(p))) return 'iproute2 (ip) is not installed';
  return undefined;
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function usedNets(): Set<number> {
  const out = execFileSync('ip', ['-4', 'route'], { encoding: 'utf8' });
  return new Set([...out.matchAll(/^10\.213\.(\d+)\./gm)].map((m) => Number(m[1])));
}

/** Makes `n` hosts. Whatever was made is removed again if a later step fails. */
export function makeNetnsLan(n: number): NetnsLan {
  const tag = randomBytes(2).toString('hex');
  const used = usedNets();
  let net = 1 + (randomBytes(1)[0]! % 250);
  while (used.has(net)) net = (net % 250) + 1;
  const bridge = `rftb${tag}`;
  const hosts: NetnsHost[] = [];
  let bridgeMade = false;
  const remove = (): void => {
    for (const h of hosts) {
      try {
        ip('netns', 'del', h.name);
      } catch {
        /* already gone */
      }
    }
    if (bridgeMade) {
      try {
        ip('link', 'del', bridge);
      } catch {
        /* already gone */
      }
    }
  };
  try {
    ip('link', 'add', bridge, 'type', 'bridge');
    bridgeMade = true;
    ip('addr', 'add', `10.213.${net}.254/24`, 'dev', bridge);
    ip('link', 'set', bridge, 'up');
    for (let i = 1; i <= n; i++) {
      const name = `rft${tag}n${i}`;
      ip('netns', 'add', name);
      hosts.push({ name, address: `10.213.${net}.${i}` });
      const outer = `rft${tag}h${i}`;
      const inner = `rft${tag}i${i}`;
      ip('link', 'add', outer, 'type', 'veth', 'peer', 'name', inner);
      ip('link', 'set', outer, 'master', bridge, 'up');
      ip('link', 'set', inner, 'netns', name);
      ip('-n', name, 'link', 'set', inner, 'name', 'eth0');
      ip('-n', name, 'addr', 'add', `10.213.${net}.${i}/24`, 'dev', 'eth0');
      ip('-n', name, 'link', 'set', 'eth0', 'up');
      ip('-n', name, 'link', 'set', 'lo', 'up');
    }
  } catch (err) {
    remove();
    throw err;
  }
  return { hosts, ifname: 'eth0', remove };
}
