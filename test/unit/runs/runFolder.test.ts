// The run folder's one events reader (src/core/runs/store/runFolder.ts) over the shared parser: lines in order, bad
// lines skipped and counted, a last line still being written left out, and a file larger than its read block
// read whole (a multi-byte character cut by a block edge included).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventLines, eventsOfText, readEventsFile, readRunEvents, runFile, RUN_FILES } from '../../../src/core/runs/store/runFolder';
import { parseEventLine } from '../../../src/core/telemetry/events';

const FIXTURES = join(__dirname, '../../fixtures/events');
const metrics = (step: number, extra: object = {}): string =>
  JSON.stringify({ v: 1, ts: 1_700_000_000 + step, type: 'metrics', step, loss: 1 / (step + 1), ...extra });

function folder(text: string): string {
  const d = mkdtempSync(join(tmpdir(), 'rft-folder-'));
  writeFileSync(runFile(d, 'events'), text);
  return d;
}

test('events reader: the shared fixtures read as the shared parser reads them line by line', () => {
  for (const name of ['qlora_run.jsonl', 'invalid_lines.jsonl', 'signed_control.jsonl']) {
    const text = readFileSync(join(FIXTURES, name), 'utf8');
    const lines = text.split('\n').filter((l) => l.trim());
    const parsed = lines.map((l) => parseEventLine(l));
    const r = readEventsFile(join(FIXTURES, name));
    assert.deepEqual(
      r.events.map((e) => e.event),
      parsed.flatMap((p) => (p.ok ? [p.event] : [])),
      name,
    );
    assert.equal(r.badLines, parsed.filter((p) => !p.ok).length, name);
    assert.ok(
      r.events.every((e) => lines.includes(e.line)),
      `${name}: each event keeps its own line`,
    );
  }
});

test('events reader: bad lines (not JSON, another version, a field out of range) are skipped and counted; blank lines are neither', () => {
  const text = [metrics(1), 'not json', '', JSON.stringify({ v: 2, ts: 1, type: 'metrics', step: 2 }), metrics(-3), '   ', metrics(4), ''].join('\n');
  const r = readRunEvents(folder(text));
  assert.deepEqual(
    r.events.map((e) => (e.event.type === 'metrics' ? e.event.step : -1)),
    [1, 4],
  );
  assert.equal(r.badLines, 3);
  assert.equal(r.partial, false);
});

test('events reader: a last line without its newline is partial while cut, and counts once it parses', () => {
  const whole = metrics(2);
  const cut = readRunEvents(folder(`${metrics(1)}\n${whole.slice(0, 20)}`));
  assert.deepEqual(
    cut.events.map((e) => e.line),
    [metrics(1)],
  );
  assert.deepEqual([cut.badLines, cut.partial], [0, true]);
  const closed = eventsOfText(`${metrics(1)}\n${whole}`);
  assert.equal(closed.events.length, 2);
  assert.deepEqual([closed.badLines, closed.partial], [0, false]);
});

test('events reader: pieces as a mirror appends them give the same events once each, in order', () => {
  const text = Array.from({ length: 50 }, (_, i) => metrics(i)).join('\n') + '\n';
  const lines = new EventLines();
  const seen: number[] = [];
  for (let i = 0; i < text.length; i += 37) for (const e of lines.push(text.slice(i, i + 37))) seen.push(e.event.type === 'metrics' ? e.event.step : -1);
  assert.deepEqual(
    seen,
    Array.from({ length: 50 }, (_, i) => i),
  );
  assert.equal(lines.end().events.length, 50);
});

test('events reader: an unterminated run of bytes past maxPending is dropped and counted, and the lines after it read', () => {
  const lines = new EventLines({ keep: false, maxPending: 1000 });
  assert.deepEqual(lines.push('x'.repeat(1500)), []);
  assert.equal(lines.push(`\n${metrics(7)}\n`).length, 1);
  assert.equal(lines.end().badLines, 1);
});

test('events reader: a file of many read blocks (about 14 MB, multi-byte text across the block edges) reads whole', () => {
  const n = 120_000;
  const rows = Array.from({ length: n }, (_, i) => metrics(i, { extra: { größe_é: i } }));
  const d = folder(rows.join('\n') + '\n');
  const t0 = process.hrtime.bigint();
  const r = readRunEvents(d);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.equal(r.events.length, n);
  assert.equal(r.badLines, 0);
  for (const i of [0, 6_000, 77_777, n - 1]) assert.deepEqual(r.events[i]!.line, rows[i]);
  console.log(`# read ${n} events (${(readFileSync(runFile(d, 'events')).length / 1e6).toFixed(1)} MB) in ${ms.toFixed(0)} ms`);
});

test("events reader: no folder, no file, or a folder in the file's place read as no events", () => {
  assert.deepEqual(readRunEvents(undefined), { events: [], badLines: 0, partial: false });
  assert.deepEqual(readRunEvents(mkdtempSync(join(tmpdir(), 'rft-empty-'))), { events: [], badLines: 0, partial: false });
  const d = mkdtempSync(join(tmpdir(), 'rft-dir-'));
  assert.deepEqual(readEventsFile(d), { events: [], badLines: 0, partial: false });
  assert.equal(RUN_FILES.events, 'events.jsonl');
});

test("run folder: the names are the runner's (python-runner/remote_finetune/run_folder.py spells the same ones)", () => {
  const py = readFileSync(join(__dirname, '../../../python-runner/remote_finetune/run_folder.py'), 'utf8');
  // bootstrap.json is the extension's own: command.sh sends the bootstrap's stdout there, the runner never names it.
  const missing = Object.values(RUN_FILES).filter((n) => n !== RUN_FILES.bootstrap && !py.includes(`"${n}"`));
  assert.deepEqual(missing, [], `names the runner's run_folder.py does not spell: ${missing.join(', ')}`);
});
