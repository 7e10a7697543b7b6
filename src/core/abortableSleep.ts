/**
 * Waits `ms`, or rejects with `aborted()` as soon as `signal` fires (at once if it already has). Each caller
 * names its own error (a ProviderError, a WandbError, a plain Error) so its callers keep recognising a cancel.
 */
export function abortableSleep(ms: number, signal: AbortSignal | undefined, aborted: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(aborted());
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
