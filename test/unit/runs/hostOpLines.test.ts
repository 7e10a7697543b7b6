// runHostOp's line assembly is linear in what the host sends: a line that never ends, delivered a kilobyte at a
// time, is neither re-copied nor re-scanned on every piece, and never held whole. The channel is a stand-in that
// hands over its pieces at once (no SSH transport), so the time measured is the assembly's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { SshSession } from '../../../src/core/ssh/session';
import { runHostOp } from '../../../src/core/runs/hosts/hostOps';

function sessionSending(pieces: readonly Buffer[]): SshSession {
  const ch = Object.assign(new EventEmitter(), {
    stderr: new EventEmitter(),
    end: () =>
      setImmediate(() => {
        for (const p of pieces) ch.emit('data', p);
        ch.emit('close');
      }),
    signal: () => undefined,
    close: () => undefined,
  });
  return {
    execStream: async () => ch,
    exitOf: async () => ({ code: 0, signal: null }),
    resolved: { alias: 'stand-in-host' },
  } as unknown as SshSession;
}

test('runHostOp: 32 MB without a line end, a kilobyte at a time, then the result: assembled in linear time', async () => {
  const piece = Buffer.alloc(1024, 'x');
  const pieces = [Buffer.from('{"op":"merge","stage":"load","message":"'), ...Array.from({ length: 32 * 1024 }, () => piece)];
  pieces.push(Buffer.from('"}\n{"op":"merge","stage":"done","path":"/m"}\n'));
  const seen: string[] = [];
  const t0 = performance.now();
  const done = await runHostOp(sessionSending(pieces), 'merge', '{}', (l) => seen.push(l.stage), undefined, { what: 'merging' });
  const ms = performance.now() - t0;
  assert.equal(done.path, '/m');
  // The 32 MB line is dropped whole (no progress line is that long); only the result is reported.
  assert.deepEqual(seen, ['done']);
  assert.ok(ms < 1_500, `took ${Math.round(ms)} ms`);
});
