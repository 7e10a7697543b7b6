// Small helpers so every wait in provisioning honours an AbortSignal.
import { abortableSleep } from '../abortableSleep';
import { ProviderError } from './provider';

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ProviderError('aborted', 'cancelled');
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return abortableSleep(ms, signal, () => new ProviderError('aborted', 'cancelled'));
}

/** A signal that fires when the caller's does or after ms, whichever comes first. */
export function withTimeout(ms: number, signal?: AbortSignal): AbortSignal {
  const t = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, t]) : t;
}
