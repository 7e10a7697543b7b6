// This machine's public IPv4 address as the internet sees it: SSH to a new instance is opened to it alone
// (an EC2 security group rule, a GCP firewall rule), never to 0.0.0.0/0.
import { ProviderError } from './provider';
import type { ProviderKind } from './provider';

async function publicIpv4(signal?: AbortSignal): Promise<string> {
  const res = await fetch('https://checkip.amazonaws.com/', {
    signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(10_000)]) : AbortSignal.timeout(10_000),
  });
  return (await res.text()).trim();
}

/** The address, checked to be a plain IPv4 (it becomes part of rule names and a /32 range). */
export async function callerIpv4(
  provider: ProviderKind,
  lookup: (signal?: AbortSignal) => Promise<string> = publicIpv4,
  signal?: AbortSignal,
): Promise<string> {
  const ip = (await lookup(signal)).trim();
  if (!/^\d{1,3}(\.\d{1,3}){3}$/.test(ip) || ip.split('.').some((o) => Number(o) > 255)) {
    throw new ProviderError('invalid', `could not learn this machine's public IPv4 address (got "${ip.slice(0, 40)}")`, provider);
  }
  return ip;
}
