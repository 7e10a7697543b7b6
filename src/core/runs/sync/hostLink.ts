// A followed run's link to its host, as the mirror sees it: connected, reconnecting since the first tail lost
// its connection, unreachable once that lasted past a threshold, ended when the follow stops. Transient: it is
// held in memory by the run manager and the views, never written to the run store.
import type { MirrorCallbacks } from './runMirror';

export type HostLink =
  | { readonly kind: 'connected' }
  | { readonly kind: 'reconnecting'; readonly since: number; readonly detail: string }
  | { readonly kind: 'unreachable'; readonly since: number; readonly detail: string }
  | { readonly kind: 'ended' };

/** How long a lost link is "reconnecting" before it is called unreachable (SshHost's backoff tries meanwhile). */
export const UNREACHABLE_AFTER_MS = 15_000;

export interface HostLinkOptions {
  readonly now?: () => number;
  readonly unreachableAfterMs?: number;
}

/**
 * One run's link state from its tails' drops and reconnects. Several tails share the host: the link is
 * connected again only when every tail that dropped has reconnected, and "since" is the first drop.
 */
export class HostLinkTracker {
  private state: HostLink = { kind: 'connected' };
  private readonly down = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;
  private readonly after: number;

  constructor(
    private readonly onChange: (state: HostLink) => void,
    options: HostLinkOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.after = options.unreachableAfterMs ?? UNREACHABLE_AFTER_MS;
  }

  get current(): HostLink {
    return this.state;
  }

  /** `tail` lost its connection (a drop, a keepalive that went unanswered). */
  dropped(tail: string, detail: string): void {
    if (this.state.kind === 'ended') return;
    this.down.add(tail);
    if (this.state.kind !== 'connected') return;
    const since = this.now();
    this.set({ kind: 'reconnecting', since, detail });
    this.timer = setTimeout(() => {
      if (this.state.kind === 'reconnecting') this.set({ kind: 'unreachable', since, detail: this.state.detail });
    }, this.after);
    this.timer.unref?.();
  }

  /** `tail` is reading again. */
  reconnected(tail: string): void {
    if (this.state.kind === 'ended') return;
    this.down.delete(tail);
    if (this.down.size > 0 || this.state.kind === 'connected') return;
    clearTimeout(this.timer);
    this.set({ kind: 'connected' });
  }

  /** The follow stopped (the run's files ended, or the watch was aborted). */
  ended(): void {
    clearTimeout(this.timer);
    this.down.clear();
    if (this.state.kind !== 'ended') this.set({ kind: 'ended' });
  }

  private set(state: HostLink): void {
    this.state = state;
    this.onChange(state);
  }
}

/** A few words for a lost link ("" while connected or ended), as the Runs view and the panels say it. */
export function hostLinkText(link: HostLink | undefined): string {
  if (link?.kind === 'reconnecting') return `host not answering since ${new Date(link.since).toLocaleTimeString()}; reconnecting`;
  if (link?.kind === 'unreachable') return `host unreachable since ${new Date(link.since).toLocaleTimeString()}`;
  return '';
}

/** The mirror's per-file drops and reconnects, fed to a run's link (runFollow.ts). */
export function linkCallbacks(link: HostLinkTracker, host: string): Pick<MirrorCallbacks, 'onDropped' | 'onReconnected'> {
  return {
    onDropped: (file) => link.dropped(file, `the connection to ${host} dropped`),
    onReconnected: (_attempt, file) => link.reconnected(file),
  };
}
