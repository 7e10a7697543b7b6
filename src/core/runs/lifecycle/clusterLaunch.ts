// The teardown guarantee for a multi-node cloud run: N instances of one type, one zone, one run id. The ledger
// names the run (and its node count) before anything is made, and every node carries the run id (tag, label,
// name), so a crash at any point, between two launches included, leaves nothing that reconcile cannot find and
// end. Any failure before every rank has started ends every node launched so far and what prepareCluster made.
import { finalCost } from '../../providers/cost';
import { ProviderError } from '../../providers/provider';
import type { Instance, LaunchRequest, Provider } from '../../providers/provider';
import type { InstanceHostKey } from '../../providers/instanceHostKey';
import type { Ledger } from '../store/ledger';
import { launchOutcomeUnknown, ProvisionError, releaseClusterOf, terminateRun } from './teardown';

export interface ClusterGuardOptions {
  readonly provider: Provider;
  readonly ledger: Ledger;
  /** What every node is launched as; cluster, launchKey and the zone are set per node here. */
  readonly request: LaunchRequest;
  readonly size: number;
  /** Each node's host key, for providers that install one (deliversHostKey). */
  readonly hostKeys?: readonly InstanceHostKey[];
  /** USD per hour of one instance. */
  readonly pricePerHour?: number;
  readonly sshTimeoutMs: number;
  readonly sshIntervalMs?: number;
  /** Runs once every node answers SSH; a throw tears them all down. */
  readonly bootstrap?: (instances: readonly Instance[], signal: AbortSignal | undefined, launchedAt: number) => Promise<void>;
  readonly signal?: AbortSignal;
  readonly log?: (line: string) => void;
  readonly cleanupTimeoutMs?: number;
}

/** Node i's launch: the first is named as a single run's instance, the others by their index. */
export function nodeRequest(base: LaunchRequest, size: number, index: number, zone: string | undefined): LaunchRequest {
  return {
    ...base,
    cluster: { size, index },
    ...(index > 0 ? { launchKey: `node${index}` } : {}),
    // After the first node, the zone it landed in is the only one: nodes of one run in two zones cannot form a cluster.
    ...(zone ? { zone } : {}),
    ...(index > 0 ? { zonePinned: true } : {}),
  };
}

/** Launches the nodes one by one, waits for SSH on all, bootstraps; on any failure every node and the cluster's network go. */
export async function provisionClusterGuarded(opts: ClusterGuardOptions): Promise<{ instances: Instance[]; launchedAt: number }> {
  const { provider, ledger, request, size, signal } = opts;
  const runId = request.runId;
  const total = opts.pricePerHour !== undefined ? opts.pricePerHour * size : undefined;
  // Before prepareCluster and the first launch: a crash anywhere after this is found again by the run id.
  await ledger.update(runId, {
    provider: provider.kind,
    region: request.region,
    zone: request.zone,
    instanceType: request.instanceType,
    spot: request.spot,
    nodes: size,
    state: 'launching',
    pricePerHour: total,
    holderPid: process.pid,
    note: `multi-node: launching ${size} instances`,
  });
  const launchedAt = Date.now();
  const instances: Instance[] = [];
  let step: 'launch' | 'ssh' | 'bootstrap' = 'launch';
  let pending: LaunchRequest | undefined;
  try {
    if (signal?.aborted) throw new ProviderError('aborted', 'cancelled before launch', provider.kind);
    await provider.prepareCluster?.(request, signal);
    let zone = request.zone;
    for (let i = 0; i < size; i++) {
      if (signal?.aborted) throw new ProviderError('aborted', `cancelled after ${i} of ${size} instances`, provider.kind);
      pending = { ...nodeRequest(request, size, i, zone), ...(opts.hostKeys?.[i] ? { hostKey: opts.hostKeys[i] } : {}) };
      const inst = await provider.launch(pending, signal);
      pending = undefined;
      instances.push(inst);
      zone = inst.zone ?? zone;
      opts.log?.(`node ${i + 1} of ${size}: ${provider.kind} instance ${inst.id}${inst.zone ? ` in ${inst.zone}` : ''}`);
      await ledger.update(runId, {
        instanceId: instances[0]!.id,
        ...(zone ? { zone } : {}),
        note: `multi-node: ${i + 1} of ${size} instances launched`,
        ...(i === size - 1 ? { state: 'active' as const, launchedAt } : {}),
      });
    }
    step = 'ssh';
    const ready = await Promise.all(
      instances.map((inst) =>
        provider.waitForSsh(inst.id, {
          timeoutMs: opts.sshTimeoutMs,
          ...(opts.sshIntervalMs ? { intervalMs: opts.sshIntervalMs } : {}),
          ...(signal ? { signal } : {}),
        }),
      ),
    );
    step = 'bootstrap';
    if (signal?.aborted) throw new ProviderError('aborted', 'cancelled before bootstrap', provider.kind);
    await opts.bootstrap?.(ready, signal, launchedAt);
    return { instances: ready, launchedAt };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    opts.log?.(`${step} of multi-node run ${runId} on ${provider.kind} failed: ${why}; tearing down ${instances.length} of ${size} instances`);
    // A launch cut short may have made its node anyway: cleanup looks for it by that launch's identity too.
    const unknown = pending && launchOutcomeUnknown(err) ? { request: pending } : undefined;
    if (unknown) await ledger.update(runId, { state: 'launch-unknown', note: `launch outcome unknown (${why}): may be running` });
    const ended = await Promise.all(instances.slice(1).map((i) => terminateRun(provider, runId, i.id, opts.cleanupTimeoutMs, opts.log)));
    const swept = await terminateRun(provider, runId, instances[0]?.id, opts.cleanupTimeoutMs, opts.log, unknown);
    const released = await releaseClusterOf(provider, ledger, runId, opts.log);
    const cleaned = swept && released && ended.every(Boolean);
    const endedAt = Date.now();
    const usd =
      total !== undefined && instances.length
        ? finalCost(provider.kind, request.instanceType, (total / size) * instances.length, launchedAt, endedAt).usd
        : undefined;
    await ledger.update(runId, { state: cleaned ? 'terminated' : 'cleanup-failed', endedAt, finalUsd: usd, note: `${step} failed: ${why}` });
    throw new ProvisionError(step, err, cleaned);
  }
}
