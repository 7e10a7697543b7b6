// The tail's line assembly is linear in what the host sends: a runaway line delivered in small pieces at a time is
// neither re-copied nor re-scanned whole on every piece. The channel is a stand-in that hands over its pieces at
// once (no SSH transport), and the runaway line is timed against the same bytes in lines that each end in their
// own piece, which costs the same per piece when assembly is linear.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { SshHost } from '../../../src/core/ssh/reconnect';
import { MAX_PENDING, tailFile } from '../../../src/core/ssh/tail';

const PIECES = 32 * 1024;
const PIECE = 256;

function hostSending(piece: Buffer): SshHost {
  function* pieces(): Generator<Buffer> {
    yield Buffer.from('RFT-TAIL 0\n');
    for (let i = 0; i < PIECES; i++) yield piece;
    yield Buffer.from('\n');
  }
  const session = {
    execStream: async () => Object.assign(Readable.from(pieces()), { stderr: new EventEmitter(), close: () => undefined }),
    exitOf: async () => ({ code: 0, signal: null }),
    resolved: { alias: 'stand-in-host' },
  };
  return { session: async () => session } as unknown as SshHost;
}

async function tailAll(piece: Buffer): Promise<{ bytes: number; biggest: number; ms: number }> {
  let bytes = 0;
  let biggest = 0;
  const t0 = performance.now();
  for await (const item of tailFile(hostSending(piece), '/run/output.log')) {
    if (item.kind !== 'data') continue;
    assert.equal(item.offset, bytes);
    bytes = item.nextOffset;
    biggest = Math.max(biggest, item.data.length);
  }
  return { bytes, biggest, ms: performance.now() - t0 };
}

test('tail: 8 MB without a line end, 256 bytes at a time, goes out in MAX_PENDING batches as fast as short lines do', async () => {
  const lines = await tailAll(Buffer.from(`${'x'.repeat(PIECE - 1)}\n`));
  const runaway = await tailAll(Buffer.alloc(PIECE, 'x'));
  assert.equal(runaway.bytes, PIECES * PIECE + 1);
  assert.equal(lines.bytes, PIECES * PIECE + 1);
  assert.ok(runaway.biggest <= MAX_PENDING + PIECE, `a batch of ${runaway.biggest} bytes`);
  assert.ok(runaway.ms < 1.5 * lines.ms + 300, `runaway line ${Math.round(runaway.ms)} ms, short lines ${Math.round(lines.ms)} ms`);
});
