// The last GPU probe of every host the extension has reached (saved, from ssh_config, of past runs), kept in
// globalState so pickers and the Hosts view show GPUs without connecting. A probe is trusted for a while
// (GPUs rarely change, but a host can be rebuilt): past PROBE_TTL_MS a pick probes again; Refresh always does.
import type { GpuProbeResult } from '../ssh/gpuProbe';

export interface ProbeEntry {
  readonly host: string;
  readonly probe: GpuProbeResult;
  /** ISO time of the probe. */
  readonly probedAt: string;
}

/** The slice of vscode.Memento the cache needs (an in-memory one in tests). */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

export const PROBES_KEY = 'remoteFinetune.hostProbes';
/** 30 minutes: long enough that picking the same host twice in a session does not reconnect. */
export const PROBE_TTL_MS = 30 * 60_000;
/** Bounds what a corrupted or hostile globalState can make us keep. */
const MAX_ENTRIES = 200;

function isEntry(v: unknown): v is ProbeEntry {
  if (typeof v !== 'object' || v === null) return false;
  const e = v as { host?: unknown; probedAt?: unknown; probe?: { kind?: unknown; gpus?: unknown; reason?: unknown } };
  if (typeof e.host !== 'string' || typeof e.probedAt !== 'string' || typeof e.probe !== 'object' || e.probe === null) return false;
  return (e.probe.kind === 'nvidia' && Array.isArray(e.probe.gpus)) || (e.probe.kind === 'none' && typeof e.probe.reason === 'string');
}

/** Whether a probe taken at `probedAt` is still to be believed at `nowMs`; an unreadable time is stale. */
export function isFresh(entry: Pick<ProbeEntry, 'probedAt'> | undefined, nowMs: number, ttlMs: number = PROBE_TTL_MS): boolean {
  if (!entry) return false;
  const at = Date.parse(entry.probedAt);
  return Number.isFinite(at) && nowMs - at >= 0 && nowMs - at < ttlMs;
}

/** The newer of two entries (the Hosts store of saved hosts also keeps a probe). */
export function newest(a: ProbeEntry | undefined, b: ProbeEntry | undefined): ProbeEntry | undefined {
  if (!a || !b) return a ?? b;
  return (Date.parse(b.probedAt) || 0) > (Date.parse(a.probedAt) || 0) ? b : a;
}

export class ProbeCache {
  private readonly listeners = new Set<() => void>();

  constructor(private readonly memento: MementoLike) {}

  all(): ProbeEntry[] {
    const raw = this.memento.get<unknown>(PROBES_KEY);
    return Array.isArray(raw) ? raw.filter(isEntry) : [];
  }

  get(host: string): ProbeEntry | undefined {
    return this.all().find((e) => e.host === host);
  }

  async set(host: string, probe: GpuProbeResult, probedAt: Date = new Date()): Promise<ProbeEntry> {
    const entry: ProbeEntry = { host, probe, probedAt: probedAt.toISOString() };
    const rest = this.all().filter((e) => e.host !== host);
    await this.memento.update(PROBES_KEY, [entry, ...rest].slice(0, MAX_ENTRIES));
    for (const l of this.listeners) l();
    return entry;
  }

  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
}
