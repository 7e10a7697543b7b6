// The log panel of a followed run takes the mirror's in-memory stream (RunManager.onLogAppended): after the
// replay of what was written before the panel opened, it reads the log file 0 times, and every line reaches
// the webview once, in order. The manager here appends and hands over exactly as runFollow does.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs, { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunStore } from '../../../src/core/runs/store/runStore';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import type { HostLink } from '../../../src/core/runs/sync/hostLink';
import type { LogAppend } from '../../../src/core/runs/sync/liveLog';
import { LiveLog } from '../../../src/core/runs/sync/liveLog';
import { runFile } from '../../../src/core/runs/store/runFolder';
import { RunPanelsContext } from '../../../src/features/runs/runPanelsContext';
import { LogStreamer } from '../../../src/features/panels/logStreamer';
import type { LogChunkMessage, LogToWebview } from '../../../src/protocol/log';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Counts opens and stats of one path through fs.promises (how the panels read files). */
function countFileAccess(path: string): { reads: () => number; reset: () => void; restore: () => void } {
  const p = fs.promises as unknown as Record<'open' | 'stat', (...a: unknown[]) => Promise<unknown>>;
  const orig = { open: p.open, stat: p.stat };
  let n = 0;
  for (const k of ['open', 'stat'] as const)
    p[k] = function (this: unknown, ...a: unknown[]) {
      if (String(a[0]) === path) n++;
      return orig[k].apply(this, a);
    };
  return {
    reads: () => n,
    reset: () => (n = 0),
    restore: () => Object.assign(p, orig),
  };
}

function runningRecord(id: string, localDir: string): RunRecord {
  const now = new Date().toISOString();
  return {
    id,
    name: 'live',
    createdAt: now,
    updatedAt: now,
    status: 'running',
    host: 'gpu-box',
    localDir,
    specPath: '/ws/finetune.yaml',
    specHash: 'h',
    provider: 'ssh',
  } as RunRecord;
}

test('log panel, live run: 0 reads of the log file after the replay; every line arrives once, in order', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-livelog-'));
  const local = join(dir, 'mirror');
  fs.mkdirSync(local);
  const logPath = runFile(local, 'log');
  const line = (i: number): string => `step ${i} loss ${(1 / (i + 1)).toFixed(4)} ünïcødé\n`;
  // Opened mid-run: 300 lines are already on disk (the replay), 400 more arrive while the panel is open.
  writeFileSync(logPath, Array.from({ length: 300 }, (_, i) => line(i)).join(''));
  const store = new RunStore(join(dir, 'runs.json'));
  store.add(runningRecord('r1', local));
  const logListeners = new Set<(runId: string, piece: LogAppend) => void>();
  const manager = {
    hostLink: (): HostLink | undefined => undefined,
    onHostLink: () => ({ dispose: () => undefined }),
    onLogAppended: (l: (runId: string, piece: LogAppend) => void) => {
      logListeners.add(l);
      return { dispose: () => logListeners.delete(l) };
    },
  };
  /** What runFollow does with each mirrored piece: append to the local copy, then hand the bytes over. */
  const mirrorAppends = (runId: string, text: string): void => {
    const bytes = Buffer.from(text);
    const offset = fs.statSync(logPath).size;
    appendFileSync(logPath, bytes);
    for (const l of logListeners) l(runId, { offset, bytes });
  };
  const access = countFileAccess(logPath);
  const ctx = new RunPanelsContext(store, () => local, manager);
  const sent: LogToWebview[] = [];
  let streamer: LogStreamer | undefined;
  try {
    const source = ctx.activeRun()!;
    // The webview acks each chunk once xterm has it (as the real page does).
    streamer = new LogStreamer(
      source,
      (m) => {
        sent.push(m);
        if (m.type === 'chunk') setImmediate(() => streamer?.ack(m.seq));
      },
      'live',
      [],
      { chunkBytes: 4096 },
    );
    await sleep(50);
    await streamer.start();
    await sleep(50);
    const replayReads = access.reads();
    access.reset();
    // Another run's bytes (its own file) are not this panel's.
    for (const l of logListeners) l('r2', { offset: 0, bytes: Buffer.from('another run\n') });
    // 400 lines in 40 pieces over about 1.2 s (longer than the old 500 ms poll, twice), one piece cut mid-line.
    for (let b = 0; b < 40; b++) {
      const text = Array.from({ length: 10 }, (_, i) => line(300 + b * 10 + i)).join('');
      if (b === 20) {
        mirrorAppends('r1', text.slice(0, 17));
        mirrorAppends('r1', text.slice(17));
      } else mirrorAppends('r1', text);
      await sleep(30);
    }
    await sleep(600);
    const liveReads = access.reads();
    const chunks = sent.filter((m): m is LogChunkMessage => m.type === 'chunk');
    const received = chunks.map((c) => c.data).join('');
    const expected = Array.from({ length: 700 }, (_, i) => line(i)).join('');
    assert.ok(replayReads >= 1, `the replay read the file (${replayReads} reads)`);
    assert.equal(liveReads, 0, `${liveReads} reads of output.log after the replay (the log panel polls the file instead of taking the stream)`);
    assert.equal(received.length, expected.length, 'every byte once');
    assert.equal(received, expected, 'every line once, in order');
    let off = 0;
    for (const c of chunks) {
      assert.equal(c.offset, off);
      off += c.bytes;
    }
    assert.equal(readFileSync(logPath, 'utf8'), expected + '', 'the stand-in mirror wrote what was streamed');
  } finally {
    access.restore();
    streamer?.dispose();
    ctx.dispose();
  }
});

test('live log: a reader that falls behind the in-memory window reads the rest from the file, and a cut starts over', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-livelog-'));
  const path = join(dir, 'output.log');
  writeFileSync(path, 'old\n');
  const log = new LiveLog(path, 64);
  const grown: Array<[number, boolean]> = [];
  log.onGrow((size, truncated) => grown.push([size, truncated]));
  const add = (text: string): void => {
    const offset = fs.statSync(path).size;
    appendFileSync(path, text);
    log.append({ offset, bytes: Buffer.from(text) });
  };
  for (let i = 0; i < 10; i++) add(`line ${i} ${'x'.repeat(20)}\n`);
  const all = readFileSync(path);
  const got: Buffer[] = [];
  for (let off = 0; off < log.size();) {
    const b = await log.read(off, 50);
    got.push(b);
    off += b.length;
  }
  assert.deepEqual(Buffer.concat(got), all);
  assert.ok(log.stats.fileReads > 1 && log.stats.memoryReads >= 1, JSON.stringify(log.stats));
  // The host's log was replaced: the mirror cut its copy back and hands over from there.
  fs.truncateSync(path, 4);
  log.append({ offset: 4, bytes: new Uint8Array(0) });
  add('new\n');
  assert.equal(Buffer.from(await log.read(4, 100)).toString(), 'new\n');
  assert.deepEqual(grown.slice(-2), [
    [4, true],
    [8, false],
  ]);
});
