// Probing a host's GPUs over the same SSH spine runs use (connect → nvidia-smi → close), recorded in the probe
// cache for every host and in the Hosts store for saved ones. Start Training asks `ensureProbe` when a host
// is picked: a fresh cached probe answers at once, else the host is probed under a cancellable notification.
import * as vscode from 'vscode';
import { withProgress } from '../linkSafeUi';
import { connect } from '../../core/ssh/session';
import type { ConnectOptions } from '../../core/ssh/session';
import { probeGpus, describeGpus } from '../../core/ssh/gpuProbe';
import type { GpuProbeResult } from '../../core/ssh/gpuProbe';
import type { ProbeCache } from '../../core/hosts/probeCache';
import { isFresh } from '../../core/hosts/probeCache';
import type { ProbeOutcome } from '../../core/hosts/gpuCheck';
import type { HostStore } from './hostStore';

export interface HostProber {
  readonly cache: ProbeCache;
  /** Connects and probes now; throws the connection's error. */
  probeNow(host: string, signal?: AbortSignal): Promise<GpuProbeResult>;
  /** A fresh cached probe, else a new one under a notification; undefined when the person cancelled it. */
  ensureProbe(host: string): Promise<ProbeOutcome | undefined>;
}

export function createHostProber(store: HostStore, cache: ProbeCache, connectOptions: () => ConnectOptions, log: vscode.LogOutputChannel): HostProber {
  const probeNow = async (host: string, signal?: AbortSignal): Promise<GpuProbeResult> => {
    const session = await connect({ host }, { ...connectOptions(), ...(signal ? { signal } : {}) });
    try {
      const probe = await probeGpus(session, signal);
      const at = new Date();
      await cache.set(host, probe, at);
      const saved = store.get(host);
      if (saved) await store.upsert({ ...saved, probe, probedAt: at.toISOString() });
      log.info(`host ${host}: ${describeGpus(probe)}`);
      return probe;
    } finally {
      session.close();
    }
  };
  return {
    cache,
    probeNow,
    async ensureProbe(host) {
      const cached = cache.get(host);
      if (cached && isFresh(cached, Date.now())) return { probe: cached.probe };
      return await withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Checking the GPUs of ${host}…`, cancellable: true },
        async (_p, token) => {
          const ac = new AbortController();
          token.onCancellationRequested(() => ac.abort());
          try {
            return { probe: await probeNow(host, ac.signal) };
          } catch (err) {
            if (ac.signal.aborted) return undefined;
            const msg = err instanceof Error ? err.message : String(err);
            log.warn(`host ${host}: GPU probe failed: ${msg}`);
            return { error: msg };
          }
        },
      );
    },
  };
}
