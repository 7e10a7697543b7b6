// The host state a run's panels show: the link to the host (core/runs/sync/hostLink.ts, from the mirror's tails)
// over what the run's files say (samples, no GPU, GPU lost), and "no GPU sample for N s" when a connected
// live run's gpu.csv stops growing.
import type { HostLink } from '../../core/runs/sync/hostLink';
import type { HostState } from '../../protocol/gpu';
import type { Unsubscribe } from './runDataSource';

/** The runner samples every 2 s: five missed samples in a row is a stall worth saying. */
export const NO_SAMPLE_AFTER_MS = 10_000;

export interface HostLinkFeed {
  current(): HostLink | undefined;
  onChange(listener: (link: HostLink) => void): Unsubscribe;
}

/** The state for the panels; `lastSampleAt` is when the last GPU sample arrived here (epoch ms). */
export function panelHostState(
  local: HostState,
  link: HostLink | undefined,
  lastSampleAt: number | undefined,
  now: number,
  noSampleAfterMs = NO_SAMPLE_AFTER_MS,
): HostState {
  if (link?.kind === 'reconnecting' || link?.kind === 'unreachable') return link;
  if (link?.kind === 'ended') return local.kind === 'gpuLost' || local.kind === 'noGpu' ? local : { kind: 'ended' };
  if (link?.kind === 'connected' && local.kind === 'connected' && lastSampleAt !== undefined && now - lastSampleAt > noSampleAfterMs)
    return { kind: 'noSample', since: lastSampleAt };
  return local;
}

/** What the log and metrics pages say of the host: text for a lost link, '' when it is live, undefined otherwise. */
export function hostStateLine(state: HostState): string | undefined {
  if (state.kind === 'unreachable')
    return `Host unreachable since ${new Date(state.since).toLocaleTimeString()}: ${state.detail}; the data resumes where it stopped.`;
  if (state.kind === 'reconnecting') return `Host not answering since ${new Date(state.since).toLocaleTimeString()}: ${state.detail}; reconnecting.`;
  if (state.kind === 'connected' || state.kind === 'noSample') return '';
  return undefined;
}

interface LocalStateSource {
  onHostState(listener: (state: HostState) => void): Unsubscribe;
  readonly lastSampleAt: number | undefined;
}

/** Current state, then each change: the local files' state merged with the link, re-checked on a clock for staleness. */
export function onLinkedHostState(
  local: LocalStateSource,
  feed: HostLinkFeed | undefined,
  listener: (state: HostState) => void,
  options: { readonly now?: () => number; readonly checkMs?: number; readonly noSampleAfterMs?: number } = {},
): Unsubscribe {
  const now = options.now ?? Date.now;
  let localState: HostState = { kind: 'connecting' };
  let last = '';
  const emit = (): void => {
    const s = panelHostState(localState, feed?.current(), local.lastSampleAt, now(), options.noSampleAfterMs);
    const key = JSON.stringify(s);
    if (key === last) return;
    last = key;
    listener(s);
  };
  const subs = [
    local.onHostState((s) => {
      localState = s;
      emit();
    }),
    ...(feed ? [feed.onChange(() => emit())] : []),
  ];
  const timer = setInterval(emit, options.checkMs ?? 1000);
  timer.unref?.();
  return {
    dispose: () => {
      clearInterval(timer);
      for (const s of subs) s.dispose();
    },
  };
}
