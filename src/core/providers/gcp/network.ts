// The firewall rules GCP instances are reached through: SSH from this machine's address only, by a target tag.
import { callerIpv4 } from '../callerIp';
import { ProviderError } from '../provider';
import type { GcpApi, GcpOperation } from './api';

/**
 * A firewall rule opening 22 to this machine's /32 only, applied by a target tag to our instances. Without
 * it an instance relies on the default network's default-allow-ssh (0.0.0.0/0), where one exists at all.
 * A rule of ours found by name is verified before reuse.
 */
export async function ensureFirewall(api: GcpApi, signal?: AbortSignal): Promise<string> {
  const ip = await callerIpv4('gcp', api.options.callerIp, signal);
  const tag = `rft-ssh-${ip.replace(/\./g, '-')}`;
  type Rule = { sourceRanges?: string[]; targetTags?: string[]; allowed?: Array<{ IPProtocol?: string; ports?: string[] }>; direction?: string };
  let rule: Rule | undefined;
  try {
    rule = (await api.call('GET', `/global/firewalls/${encodeURIComponent(tag)}`, undefined, signal)) as Rule;
  } catch (err) {
    if (!(err instanceof ProviderError && err.code === 'not-found')) throw err;
  }
  if (rule) {
    const ok = JSON.stringify(rule.sourceRanges ?? []) === JSON.stringify([`${ip}/32`]) && (rule.targetTags ?? []).includes(tag);
    if (!ok)
      throw new ProviderError(
        'invalid',
        `firewall rule ${tag} allows ${(rule.sourceRanges ?? []).join(', ') || 'nothing'} to ${(rule.targetTags ?? []).join(', ') || 'every instance'}, not ${ip}/32 to ${tag}: delete it, then retry`,
        'gcp',
      );
    return tag;
  }
  await insertFirewall(
    api,
    {
      name: tag,
      description: `Remote Fine-Tune: SSH from ${ip} only`,
      sourceRanges: [`${ip}/32`],
      targetTags: [tag],
      allowed: [{ IPProtocol: 'tcp', ports: ['22'] }],
    },
    signal,
  );
  return tag;
}

/** An ingress rule on the default network, awaited through its global operation. */
export async function insertFirewall(api: GcpApi, rule: Record<string, unknown>, signal?: AbortSignal): Promise<void> {
  const op = (await api.call(
    'POST',
    '/global/firewalls',
    { network: 'global/networks/default', direction: 'INGRESS', priority: 1000, ...rule },
    signal,
  )) as GcpOperation;
  await api.waitOperation(op, undefined, signal);
}
