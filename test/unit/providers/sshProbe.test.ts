// The SSH-answers check at the provider layer, against tiny TCP servers (stand-ins that only write a banner).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { probeSshBanner, waitForSshViaDescribe } from '../../../src/core/providers/sshProbe';
import { ProviderError } from '../../../src/core/providers/provider';
import type { Instance, Provider } from '../../../src/core/providers/provider';

async function serve(onConnect: (write: (s: string) => void) => void): Promise<{ server: Server; port: number }> {
  const server = createServer((sock) => {
    sock.on('error', () => undefined);
    onConnect((s) => sock.write(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : 0 };
}

test('sshProbe: reads the SSH-2.0 banner, also after other lines (RFC 4253 4.2)', async () => {
  const { server, port } = await serve((w) => w('Welcome\r\nSSH-2.0-OpenSSH_9.2p1 Debian-2\r\n'));
  try {
    assert.equal(await probeSshBanner('127.0.0.1', port, 2000), 'SSH-2.0-OpenSSH_9.2p1 Debian-2');
  } finally {
    server.close();
  }
});

test('sshProbe: a port that answers with something else, or nothing, is not SSH', async () => {
  const http = await serve((w) => w('HTTP/1.1 400 Bad Request\r\n\r\n'));
  const silent = await serve(() => undefined);
  try {
    const t0 = Date.now();
    assert.equal(await probeSshBanner('127.0.0.1', http.port, 300), undefined);
    assert.equal(await probeSshBanner('127.0.0.1', silent.port, 200), undefined);
    assert.ok(Date.now() - t0 < 2000);
  } finally {
    http.server.close();
    silent.server.close();
  }
  // Connection refused: nothing listens on 127.0.0.2 at that port.
  assert.equal(await probeSshBanner('127.0.0.2', http.port, 500), undefined);
});

test('sshProbe: an abort ends the probe at once', async () => {
  const silent = await serve(() => undefined);
  try {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const t0 = Date.now();
    assert.equal(await probeSshBanner('127.0.0.1', silent.port, 10_000, ac.signal), undefined);
    assert.ok(Date.now() - t0 < 2000);
  } finally {
    silent.server.close();
  }
});

/** A provider whose instance runs at once at host:port; only describe is asked for. */
function runningAt(host: string, port: number): Provider {
  const instance: Instance = {
    provider: 'ec2',
    id: 'i-1',
    region: 'r',
    instanceType: 't',
    state: 'running',
    publicIp: host,
    sshPort: port,
    sshUser: 'ubuntu',
    spot: false,
  };
  const unused = (): never => {
    throw new Error('not asked for');
  };
  return {
    kind: 'ec2',
    canStop: true,
    describe: async () => instance,
    listOffers: unused,
    launch: unused,
    waitForSsh: unused,
    terminate: unused,
    stop: unused,
    listOwned: unused,
  };
}

test('waitForSshViaDescribe: waits until sshd answers on the instance, times out when it never does', async () => {
  const first = await serve(() => undefined);
  const port = first.port;
  await new Promise<void>((r) => first.server.close(() => r()));
  let late: Server | undefined;
  const timer = setTimeout(() => {
    late = createServer((sock) => sock.end('SSH-2.0-test\r\n'));
    late.listen(port, '127.0.0.1');
  }, 150);
  try {
    const t0 = Date.now();
    const i = await waitForSshViaDescribe(runningAt('127.0.0.1', port), 'i-1', { timeoutMs: 5000, intervalMs: 30 });
    assert.ok(Date.now() - t0 >= 100, 'it waited for the listener');
    assert.equal(i.sshPort, port);
    await assert.rejects(
      waitForSshViaDescribe(runningAt('127.0.0.2', port), 'i-1', { timeoutMs: 300, intervalMs: 50 }),
      (e: unknown) => e instanceof ProviderError && e.code === 'timeout',
    );
  } finally {
    clearTimeout(timer);
    late?.close();
  }
});
