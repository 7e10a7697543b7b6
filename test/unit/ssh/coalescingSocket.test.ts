// The socket under ssh2: writes made in one tick leave as one writev, every byte arrives in order, and nothing
// is held past the tick (a lone write, as a keepalive or a command is, goes out at once).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { connectCoalescing } from '../../../src/core/ssh/coalescingSocket';

interface Counted {
  sock: Socket;
  calls: { write: number; writev: number };
}

async function pair(): Promise<{ server: Server; received: () => Buffer; client: Counted; waitFor: (n: number) => Promise<void> }> {
  const chunks: Buffer[] = [];
  let size = 0;
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const server = createServer((c) =>
    c.on('data', (d: Buffer) => {
      chunks.push(d);
      size += d.length;
      for (const w of waiters.filter((x) => size >= x.n)) w.resolve();
    }),
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const sock = connectCoalescing('127.0.0.1', (server.address() as AddressInfo).port);
  const calls = { write: 0, writev: 0 };
  // Count what reaches the libuv layer: one _write per uncoalesced write, one _writev per coalesced batch.
  const s = sock as unknown as { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };
  const w = s._write.bind(sock);
  const wv = s._writev.bind(sock);
  s._write = (...a) => {
    calls.write++;
    w(...a);
  };
  s._writev = (...a) => {
    calls.writev++;
    wv(...a);
  };
  await new Promise<void>((r) => sock.once('connect', () => r()));
  return {
    server,
    client: { sock, calls },
    received: () => Buffer.concat(chunks),
    waitFor: (n) => (size >= n ? Promise.resolve() : new Promise((resolve) => waiters.push({ n, resolve }))),
  };
}

test('writes in one tick go out as one writev, in order and complete', async () => {
  const { server, client, received, waitFor } = await pair();
  const parts = Array.from({ length: 120 }, (_, i) => Buffer.alloc(100 + i, i));
  for (const p of parts) client.sock.write(p);
  await waitFor(parts.reduce((n, p) => n + p.length, 0));
  assert.deepEqual(client.calls, { write: 0, writev: 1 });
  assert.ok(received().equals(Buffer.concat(parts)));
  client.sock.destroy();
  server.close();
});

test('a lone write is not held: it is sent within the tick, before any timer', async () => {
  const { server, client, waitFor } = await pair();
  client.sock.write('ping');
  // Once the tick ends the socket is uncorked; a timer (the earliest a caller could notice a delay) sees it gone.
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(client.sock.writableLength, 0);
  assert.equal(client.sock.writableCorked, 0);
  await waitFor(4);
  assert.equal(client.calls.write + client.calls.writev, 1);
  client.sock.destroy();
  server.close();
});

test('writes in separate ticks are separate sends; a write after destroy reports an error instead of throwing', async () => {
  const { server, client, received, waitFor } = await pair();
  client.sock.write('a');
  await new Promise((r) => setImmediate(r));
  client.sock.write('b');
  await waitFor(2);
  assert.equal(received().toString(), 'ab');
  assert.equal(client.calls.write, 2);
  client.sock.destroy();
  const err = await new Promise<Error | null | undefined>((r) => client.sock.write('late', (e) => r(e)));
  assert.ok(err instanceof Error);
  server.close();
});
