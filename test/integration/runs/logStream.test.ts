// The log panel's live stream at its source (issue 38.2), on a real sshd host: RunManager.onLogAppended hands
// over each piece the mirror appends to the run's local output.log, at the offset it was written, so the pieces
// joined are the local file byte for byte and every line arrives once, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogAppend } from '../../../src/core/runs/sync/liveLog';
import { runFile } from '../../../src/core/runs/store/runFolder';
import { ownScriptWorkspace, runFinished, sshStartRequest, testRunManager, standInHost } from '../../support/runHosts';

const host = standInHost();

/** 200 numbered lines in bursts, some written in two halves (a line the tail may cut). */
const SCRIPT = `import sys, time
for i in range(1, 201):
    if i % 7 == 0:
        sys.stdout.write("line %d half " % i); sys.stdout.flush(); time.sleep(0.02)
        print("and the rest", flush=True)
    else:
        print("line %d" % i, flush=True)
    if i % 10 == 0:
        time.sleep(0.05)
`;

test('log stream: the pieces the manager hands over are the local log, contiguous, each line once in order', { timeout: 180_000 }, async () => {
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, host.connectOptions());
  const ws = ownScriptWorkspace();
  writeFileSync(join(ws, 'lines.py'), SCRIPT);
  const pieces = new Map<string, LogAppend[]>();
  const sub = m.onLogAppended((id, piece) => pieces.set(id, [...(pieces.get(id) ?? []), { offset: piece.offset, bytes: Buffer.from(piece.bytes) }]));
  const rec = await m.start(sshStartRequest(host.sshd(), ws, 'log-stream', 'python3 lines.py'));
  const f = await runFinished(m, rec.id);
  sub.dispose();
  assert.equal(f.record.status, 'completed', JSON.stringify(f.failure));
  const got = pieces.get(rec.id) ?? [];
  assert.ok(got.length > 1, `${got.length} pieces`);
  let off = got[0]!.offset;
  for (const p of got) {
    assert.equal(p.offset, off, 'each piece starts where the one before ended');
    off += p.bytes.length;
  }
  const local = readFileSync(runFile(f.record.localDir ?? m.localDirOf(rec.id), 'log'));
  const streamed = Buffer.concat(got.map((p) => p.bytes));
  assert.equal(streamed.toString('utf8'), local.subarray(got[0]!.offset).toString('utf8'), 'the stream is the local file');
  const numbered = streamed
    .toString('utf8')
    .split('\n')
    .map((l) => /^line (\d+)/.exec(l)?.[1])
    .filter((n) => n !== undefined)
    .map(Number);
  assert.deepEqual(
    numbered,
    Array.from({ length: 200 }, (_, i) => i + 1),
  );
  await m.dispose();
});
