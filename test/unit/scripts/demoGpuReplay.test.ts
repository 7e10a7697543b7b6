// The demo's GPU replay: the real H200 capture's own lines, in gpu.csv as the runner writes it, under a folder
// (the GPU panel's label) that says it is a replay of a real H200 capture, going on at the capture's pace.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CAPTURE_INTERVAL_MS, H200_CAPTURE, REPLAY_FOLDER, captureLines, startGpuReplay } from '../../../scripts/demoGpuReplay';
import { parseGpuCsvLine, parseNvidiaSmiGpuLine } from '../../../src/core/telemetry/nvidiaSmi';

const REPO = resolve(__dirname, '../../..');
const tmp = mkdtempSync(join(tmpdir(), 'rft-replay-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

test('the replay is labelled as such and its provenance is the committed capture', () => {
  assert.equal(REPLAY_FOLDER, 'replay of a real H200 capture');
  assert.match(readFileSync(join(REPO, 'test/fixtures/nvidia-smi/real/SOURCES.md'), 'utf8'), new RegExp(H200_CAPTURE.split('/').pop()!.replace(/\./g, '\\.')));
  const lines = captureLines(REPO);
  assert.equal(lines.length, 120);
  assert.ok(lines.every((l) => parseNvidiaSmiGpuLine(l)?.name === 'NVIDIA H200'));
});

test('gpu.csv starts with the whole capture as history ending now, then grows one capture line per interval', async () => {
  const ws = join(tmp, 'ws');
  const t0 = 1_800_000_000_000;
  let clock = t0;
  const replay = startGpuReplay(ws, REPO, { intervalMs: 15, now: () => clock });
  try {
    assert.equal(replay.gpuCsv, join(ws, REPLAY_FOLDER, 'gpu.csv'));
    assert.match(readFileSync(join(ws, REPLAY_FOLDER, 'README.md'), 'utf8'), /^# Replay of a real H200 capture\n[\s\S]*not this machine's GPU/);
    const capture = captureLines(REPO).map((l) => parseNvidiaSmiGpuLine(l)!);
    const first = readFileSync(replay.gpuCsv, 'utf8').trim().split('\n');
    const samples = first.map((l) => parseGpuCsvLine(l)!);
    assert.equal(samples.length, capture.length);
    samples.forEach((s, i) => {
      const { ts, ...rest } = s;
      assert.deepEqual(rest, capture[i], `line ${i + 1} is the capture's`);
      assert.equal(Math.round(ts! * 1000), t0 - (capture.length - i) * CAPTURE_INTERVAL_MS);
    });
    clock += 1000;
    await new Promise((r) => setTimeout(r, 200));
    const grown = readFileSync(replay.gpuCsv, 'utf8').trim().split('\n').slice(capture.length);
    assert.ok(grown.length >= 3, `${grown.length} live lines after 200 ms at 15 ms`);
    assert.deepEqual(
      grown.map((l) => parseGpuCsvLine(l)!),
      grown.map((_, i) => ({ ...capture[i % capture.length]!, ts: (t0 + 1000) / 1000 })),
    );
  } finally {
    replay.stop();
  }
  const n = readFileSync(replay.gpuCsv, 'utf8').split('\n').length;
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(readFileSync(replay.gpuCsv, 'utf8').split('\n').length, n, 'stop() stops it');
});
