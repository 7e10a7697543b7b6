// The hosts the user added, kept in globalState (no secrets: a host name, its port/user, and the last GPU
// probe). Plain logic, no `vscode` import, so it is unit-tested with an in-memory memento.
import type { GpuProbeResult } from '../../core/ssh/gpuProbe';

export interface SavedHost {
  /** ssh_config alias or user@host[:port], exactly what connect() takes. */
  readonly host: string;
  readonly addedAt: string;
  readonly probe?: GpuProbeResult;
  readonly probedAt?: string;
}

/** The slice of vscode.Memento this store needs. */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

export const HOSTS_KEY = 'remoteFinetune.hosts';

function isSavedHost(v: unknown): v is SavedHost {
  return typeof v === 'object' && v !== null && typeof (v as { host?: unknown }).host === 'string' && typeof (v as { addedAt?: unknown }).addedAt === 'string';
}

export class HostStore {
  private readonly listeners = new Set<() => void>();

  constructor(private readonly memento: MementoLike) {}

  list(): SavedHost[] {
    const raw = this.memento.get<unknown>(HOSTS_KEY);
    return Array.isArray(raw) ? raw.filter(isSavedHost) : [];
  }

  get(host: string): SavedHost | undefined {
    return this.list().find((h) => h.host === host);
  }

  async upsert(entry: SavedHost): Promise<void> {
    const rest = this.list().filter((h) => h.host !== entry.host);
    await this.memento.update(
      HOSTS_KEY,
      [...rest, entry].sort((a, b) => a.host.localeCompare(b.host)),
    );
    this.fire();
  }

  async remove(host: string): Promise<void> {
    await this.memento.update(
      HOSTS_KEY,
      this.list().filter((h) => h.host !== host),
    );
    this.fire();
  }

  /** What the Start Training picker shows: host and probed GPU names. */
  knownHosts(): Array<{ host: string; gpus?: string[] }> {
    // A probe that found no NVIDIA GPU is an empty list (said as such in the picker), not "never probed".
    return this.list().map((h) => (h.probe ? { host: h.host, gpus: h.probe.kind === 'nvidia' ? h.probe.gpus.map((g) => g.name) : [] } : { host: h.host }));
  }

  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private fire(): void {
    for (const l of this.listeners) l();
  }
}
