import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { LogStreamer } from '../../../src/features/panels/logStreamer';
import type { LogChunk, Unsubscribe } from '../../../src/features/panels/runDataSource';
import type { LogChunkMessage, LogInitMessage, LogToWebview } from '../../../src/protocol/log';

/** A log held in memory that can grow, shaped like RunDataSource's log half. */
class MemoryLog {
  bytes = Buffer.alloc(0);
  private listeners = new Set<(n: number) => void>();
  append(b: Buffer | string): void {
    this.bytes = Buffer.concat([this.bytes, typeof b === 'string' ? Buffer.from(b) : b]);
    for (const l of this.listeners) l(this.bytes.length);
  }
  logSize(): number {
    return this.bytes.length;
  }
  async readLog(offset: number, max: number): Promise<LogChunk> {
    return { offset, bytes: this.bytes.subarray(offset, Math.min(this.bytes.length, offset + max)) };
  }
  onLogGrown(l: (n: number) => void): Unsubscribe {
    this.listeners.add(l);
    return { dispose: () => this.listeners.delete(l) };
  }
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('never more than the window in flight; acks resume the stream; every byte arrives once, in order', async () => {
  const log = new MemoryLog();
  log.append('x'.repeat(1_000_000));
  const sent: LogToWebview[] = [];
  const s = new LogStreamer(log, (m) => sent.push(m), 't', [], { windowBytes: 100_000, chunkBytes: 30_000, tailBytes: Infinity });
  await s.start();
  assert.equal(sent[0]!.type, 'init');
  const chunks = (): LogChunkMessage[] => sent.filter((m): m is LogChunkMessage => m.type === 'chunk');
  assert.ok(s.inFlightNow <= 100_000);
  assert.ok(chunks().length < 10, 'it stopped at the window instead of sending everything');
  let acked = 0;
  while (acked < chunks().length) {
    s.ack(chunks()[acked]!.seq);
    acked++;
    await tick();
    assert.ok(s.inFlightNow <= 100_000);
  }
  const all = chunks();
  assert.equal(
    all.reduce((n, c) => n + c.bytes, 0),
    1_000_000,
  );
  let off = 0;
  for (const c of all) {
    assert.equal(c.offset, off);
    off += c.bytes;
  }
  assert.equal(s.stats.maxInFlightBytes <= 100_000, true);
  // Growth after the end is picked up through onLogGrown.
  log.append('tail\n');
  await tick();
  assert.equal(chunks().at(-1)!.data, 'tail\n');
  s.dispose();
});

test('multi-byte characters split across chunks decode whole; invalid UTF-8 becomes U+FFFD', async () => {
  const log = new MemoryLog();
  log.append(Buffer.concat([Buffer.from('€uro ✓ '), Buffer.from([0xff, 0xc0, 0xaf]), Buffer.from(' end\n')]));
  const sent: LogToWebview[] = [];
  const s = new LogStreamer(log, (m) => sent.push(m), 't', [], { windowBytes: 1e6, chunkBytes: 1, tailBytes: Infinity });
  await s.start();
  const text = sent
    .filter((m): m is LogChunkMessage => m.type === 'chunk')
    .map((m) => m.data)
    .join('');
  assert.ok(text.startsWith('€uro ✓ '));
  assert.ok(text.includes('\ufffd'));
  assert.ok(text.endsWith(' end\n'));
  s.dispose();
});

test('a (re)attach sends only the tail, starting at a line boundary, and says so', async () => {
  const log = new MemoryLog();
  for (let i = 0; i < 10_000; i++) log.append(`line ${i}\n`);
  const sent: LogToWebview[] = [];
  const s = new LogStreamer(log, (m) => sent.push(m), 't', [], { tailBytes: 1000, windowBytes: 1e6 });
  await s.start();
  const init = sent[0] as LogInitMessage;
  assert.equal(init.truncated, true);
  assert.ok(log.bytes.length - init.startOffset <= 1000);
  assert.equal(log.bytes[init.startOffset - 1], 0x0a, 'starts right after a newline');
  const first = (sent[1] as LogChunkMessage).data;
  assert.match(first, /^line \d+\n/);
  // A reload of the page: start again, from the tail again, with a fresh init.
  sent.length = 0;
  await s.start();
  assert.equal(sent[0]!.type, 'init');
  s.dispose();
});
