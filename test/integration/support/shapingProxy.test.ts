// The WAN stand-in must do what the WAN benchmarks rely on: add the round trip it says, cap the rate it says
// (for all connections together), keep bytes in order, and stop reading when its queue is full (so a sender is
// held back as by TCP's window).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect } from 'node:net';
import type { Socket } from 'node:net';
import { randomBytes, createHash } from 'node:crypto';
import { startShapingProxy } from '../../support/shapingProxy';

async function server(onConn: (s: Socket) => void): Promise<{ port: number; close: () => Promise<void> }> {
  const srv = createServer(onConn);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as { port: number }).port, close: () => new Promise<void>((r) => srv.close(() => r())) };
}

test('a 1-byte echo takes the round trip; bulk data arrives whole, in order, at the link rate', async () => {
  const sink = { bytes: 0, hash: createHash('sha256') };
  let done: () => void = () => undefined;
  const finished = new Promise<void>((r) => {
    done = r;
  });
  const echo = await server((s) => {
    s.on('data', (d: Buffer) => {
      if (d.length === 1 && d[0] === 0x2a && sink.bytes === 0) {
        s.write(d);
        return;
      }
      sink.bytes += d.length;
      sink.hash.update(d);
    });
    s.on('end', () => {
      done();
      s.end();
    });
  });
  const proxy = await startShapingProxy({ host: '127.0.0.1', port: echo.port }, { rttMs: 40, bitsPerSecond: 80e6 });
  try {
    const c = connect(proxy.port, '127.0.0.1');
    c.setNoDelay(true);
    await new Promise<void>((r) => c.once('connect', () => r()));
    const t0 = performance.now();
    c.write(Buffer.from([0x2a]));
    await new Promise<void>((r) => c.once('data', () => r()));
    const rtt = performance.now() - t0;
    assert.ok(rtt >= 39 && rtt < 60, `round trip ${rtt.toFixed(1)} ms, want about 40`);
    // 8 MB at 80 Mbit/s is 0.8 s on the wire, plus half a round trip.
    const payload = randomBytes(8_000_000);
    const t1 = performance.now();
    c.end(payload);
    await finished;
    const secs = (performance.now() - t1) / 1000;
    assert.equal(sink.bytes, payload.length);
    assert.equal(sink.hash.digest('hex'), createHash('sha256').update(payload).digest('hex'), 'bytes in order');
    const mbit = (payload.length * 8) / secs / 1e6;
    assert.ok(mbit > 64 && mbit <= 82, `rate ${mbit.toFixed(1)} Mbit/s, want about 80`);
    assert.equal(proxy.carried.up, payload.length + 1);
  } finally {
    await proxy.close();
    await echo.close();
  }
});

test('connections share the link: four at once get its rate between them, not four times it', async () => {
  let received = 0;
  let ended = 0;
  let allEnded: () => void = () => undefined;
  const done = new Promise<void>((r) => {
    allEnded = r;
  });
  const sink = await server((s) => {
    s.on('data', (d: Buffer) => {
      received += d.length;
    });
    s.on('end', () => {
      if (++ended === 4) allEnded();
    });
  });
  const proxy = await startShapingProxy({ host: '127.0.0.1', port: sink.port }, { rttMs: 10, bitsPerSecond: 80e6 });
  try {
    const each = 2_000_000;
    const t0 = performance.now();
    for (let i = 0; i < 4; i++) connect(proxy.port, '127.0.0.1').end(Buffer.alloc(each, i));
    await done;
    const mbit = (received * 8) / ((performance.now() - t0) / 1000) / 1e6;
    assert.equal(received, 4 * each);
    // 8 MB at 80 Mbit/s in all is 0.8 s; a link per connection would have taken 0.2 s (320 Mbit/s).
    assert.ok(mbit > 64 && mbit <= 82, `aggregate rate ${mbit.toFixed(1)} Mbit/s, want about 80`);
  } finally {
    await proxy.close();
    await sink.close();
  }
});

test('a full queue stops reading: the sender is held back instead of the proxy buffering everything', async () => {
  let received = 0;
  const slow = await server((s) => {
    s.on('data', (d: Buffer) => {
      received += d.length;
    });
  });
  const proxy = await startShapingProxy({ host: '127.0.0.1', port: slow.port }, { rttMs: 20, bitsPerSecond: 8e6, queueBytes: 1 << 20 });
  try {
    const c = connect(proxy.port, '127.0.0.1');
    await new Promise<void>((r) => c.once('connect', () => r()));
    const chunk = Buffer.alloc(1 << 20);
    for (let i = 0; i < 64; i++) c.write(chunk);
    await new Promise((r) => setTimeout(r, 500));
    // At 1 MB/s about 0.5 MB got through; with reading paused, most of the 64 MiB still waits in the sender.
    assert.ok(received < 2_000_000, `received ${received}`);
    assert.ok(c.writableLength > 32 << 20, `the sender still holds ${c.writableLength} bytes`);
    c.destroy();
  } finally {
    await proxy.close();
    await slow.close();
  }
});
