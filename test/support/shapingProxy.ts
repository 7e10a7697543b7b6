// A TCP proxy on loopback that behaves like a long link: each direction delays every byte by half the round
// trip and serialises bytes at the link's rate (a token bucket in time), keeping order. Loopback hides what
// users feel when they upload datasets and fetch checkpoints over 20–100 ms: a single SSH channel can have at
// most its window (2 MiB for OpenSSH's sshd) in flight, so one channel moves at most a window per round trip.
// The proxy holds at most `queueBytes` per direction before it stops reading, which stands in for the TCP
// window of a real path (the sender's socket then fills and blocks, as it would). Stand-in, named as such: a
// real WAN also has loss and jitter, which this does not model.
import { createServer, connect } from 'node:net';
import type { Server, Socket } from 'node:net';

export interface ShapingOptions {
  /** Round-trip time added (split evenly between the directions). */
  readonly rttMs: number;
  /** Link rate per direction. */
  readonly bitsPerSecond: number;
  /** Bytes held per direction before reading pauses; default twice the bandwidth-delay product (min 1 MiB). */
  readonly queueBytes?: number;
}

export interface ShapingProxy {
  readonly port: number;
  readonly options: ShapingOptions;
  /** Bytes carried per direction since start (client→server, server→client). */
  readonly carried: { up: number; down: number };
  close(): Promise<void>;
}

/** One direction of the link, shared by every connection through it: when it is free to send again. */
interface LinkDirection {
  freeAt: number;
}

/**
 * One direction of one connection: `from`'s bytes reach `to` delayed and rate-limited, in order. The rate is
 * the link's, shared with every other connection going the same way (several connections do not get a link
 * each, as they would not on a real path); the queue limit is per connection, as a TCP window is.
 */
function shape(from: Socket, to: Socket, o: Required<ShapingOptions>, link: LinkDirection, count: (n: number) => void): void {
  const oneWayMs = o.rttMs / 2;
  const bytesPerMs = o.bitsPerSecond / 8 / 1000;
  const queue: Array<{ at: number; data: Buffer }> = [];
  let queued = 0;
  let timer: NodeJS.Timeout | undefined;
  let ended = false;
  const flush = (): void => {
    timer = undefined;
    const now = performance.now();
    while (queue.length > 0 && queue[0]!.at <= now + 0.5) {
      const { data } = queue.shift()!;
      queued -= data.length;
      count(data.length);
      if (!to.destroyed) to.write(data);
    }
    if (from.isPaused() && queued < o.queueBytes / 2) from.resume();
    if (queue.length > 0) timer = setTimeout(flush, Math.max(0, queue[0]!.at - performance.now()));
    else if (ended && !to.destroyed) to.end();
  };
  from.on('data', (data: Buffer) => {
    const now = performance.now();
    // The chunk leaves once the link has sent what is ahead of it, and arrives a one-way delay later.
    link.freeAt = Math.max(now, link.freeAt) + data.length / bytesPerMs;
    queue.push({ at: link.freeAt + oneWayMs, data });
    queued += data.length;
    if (queued >= o.queueBytes) from.pause();
    timer ??= setTimeout(flush, Math.max(0, queue[0]!.at - now));
  });
  from.on('end', () => {
    ended = true;
    if (queue.length === 0 && !to.destroyed) to.end();
  });
  from.on('error', () => to.destroy());
}

export async function startShapingProxy(target: { host: string; port: number }, options: ShapingOptions): Promise<ShapingProxy> {
  const bdp = (options.bitsPerSecond / 8) * (options.rttMs / 1000);
  const o: Required<ShapingOptions> = { queueBytes: Math.max(1 << 20, Math.ceil(2 * bdp)), ...options };
  const sockets = new Set<Socket>();
  const carried = { up: 0, down: 0 };
  const up: LinkDirection = { freeAt: 0 };
  const down: LinkDirection = { freeAt: 0 };
  // Half-open allowed: a side that finished sending still gets what is queued for it; each direction passes
  // its end on once its queue has drained (shape()), and a reset (error) tears both down.
  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    const upstream = connect({ port: target.port, host: target.host, allowHalfOpen: true });
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    }
    shape(client, upstream, o, up, (n) => {
      carried.up += n;
    });
    shape(upstream, client, o, down, (n) => {
      carried.down += n;
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  return {
    port,
    options: o,
    carried,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * The proxy in a process of its own, so its work never shares a thread with the client being measured (in
 * the benchmark process it would slow ours, whose SSH crypto runs on that thread, and not OpenSSH's).
 */
export async function startShapingProxyProcess(target: { host: string; port: number }, options: ShapingOptions): Promise<ShapingProxy> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['--import', 'tsx', __filename, JSON.stringify({ target, options })], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    child.once('exit', (c) => reject(new Error(`shaping proxy exited (${String(c)})`)));
  });
  const info = JSON.parse(first) as { port: number; options: Required<ShapingOptions> };
  return {
    port: info.port,
    options: info.options,
    carried: { up: Number.NaN, down: Number.NaN },
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

if (require.main === module) {
  const { target, options } = JSON.parse(process.argv[2] ?? '{}') as { target: { host: string; port: number }; options: ShapingOptions };
  void startShapingProxy(target, options).then((p) => {
    process.stdout.write(`${JSON.stringify({ port: p.port, options: p.options })}\n`);
    process.on('SIGTERM', () => {
      void p.close().then(() => process.exit(0));
    });
  });
}
