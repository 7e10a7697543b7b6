// "SSH answers" at this layer means: a TCP connect succeeds and the server sends its SSH-2.0 banner.
// Authentication is core/ssh's job; a banner is enough to know sshd is up and reachable.
import { connect } from 'node:net';
import { sleep } from './abort';
import { ProviderError } from './provider';
import type { Instance, Provider, WaitForSshOptions } from './provider';

/** One attempt: resolves with the banner line, or undefined when nothing SSH-like answered in time. */
export function probeSshBanner(host: string, port: number, timeoutMs: number, signal?: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    let buf = '';
    let done = false;
    const socket = connect({ host, port });
    const finish = (value: string | undefined): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(value);
    };
    const onAbort = (): void => finish(undefined);
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    signal?.addEventListener('abort', onAbort, { once: true });
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      buf += chunk;
      // RFC 4253 4.2: the server may send other lines before the identification string.
      for (const line of buf.split('\n')) {
        if (line.startsWith('SSH-2.0-') || line.startsWith('SSH-1.99-')) {
          finish(line.replace(/\r$/, ''));
          return;
        }
      }
      if (buf.length > 8192) finish(undefined);
    });
    socket.on('error', () => finish(undefined));
    socket.on('close', () => finish(undefined));
  });
}

/**
 * Describe until the instance runs and has an address, then probe until sshd answers.
 * Rejects with 'timeout' (never reachable), 'not-found'/'unreachable' when the instance went away,
 * or 'aborted'.
 */
export async function waitForSshViaDescribe(provider: Provider, instanceId: string, options: WaitForSshOptions): Promise<Instance> {
  const interval = options.intervalMs ?? 5000;
  const deadline = Date.now() + options.timeoutMs;
  let last: Instance | undefined;
  for (;;) {
    if (options.signal?.aborted) throw new ProviderError('aborted', 'cancelled', provider.kind);
    last = await provider.describe(instanceId, options.signal);
    if (!last) throw new ProviderError('not-found', `instance ${instanceId} disappeared while waiting for SSH`, provider.kind);
    if (last.state === 'terminated' || last.state === 'terminating') {
      throw new ProviderError('unreachable', `instance ${instanceId} is ${last.state}${last.interrupted ? ' (reclaimed by the cloud)' : ''}`, provider.kind);
    }
    if (last.state === 'running' && last.publicIp) {
      const left = Math.max(1, deadline - Date.now());
      const banner = await probeSshBanner(last.publicIp, last.sshPort, Math.min(5000, left), options.signal);
      if (banner) return last;
    }
    if (Date.now() + interval > deadline) break;
    await sleep(interval, options.signal);
  }
  throw new ProviderError(
    'timeout',
    `SSH on ${instanceId} (${last?.publicIp ?? 'no address yet'}) did not answer within ${Math.round(options.timeoutMs / 1000)} s`,
    provider.kind,
  );
}
