// Byte-offset tails against a real sshd: 20 forced disconnects during a running job with a byte-identical
// result, exact resume from an offset, truncation, and backpressure with a slow consumer.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync, truncateSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { clientFor } from '../../support/sshClient';
import { SshHost } from '../../../src/core/ssh/reconnect';
import { startDetached, runStatus } from '../../../src/core/ssh/detachedJob';
import { tailFile, splitLines } from '../../../src/core/ssh/tail';
import { shellQuote } from '../../../src/core/ssh/quote';

let sshd: Sshd;
let host: SshHost;
before(async () => {
  sshd = await startSshd();
  host = new SshHost({ host: 'tail-test' }, clientFor(sshd, { alias: 'tail-test' }).options, { initialMs: 50, maxMs: 1000 });
});
after(async () => {
  host.close();
  await sshd.stop();
});

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

test('20 forced disconnects during a running job: the received log is sha256-identical and the exit code right', { timeout: 180_000 }, async () => {
  const stopFlag = join(sshd.home, 'stop-writing');
  // Lines of varying length with multibyte text, written until the test raises the flag; then exit 7.
  const job =
    `awk -v flag=${shellQuote(stopFlag)} 'BEGIN { for (i = 0; ; i++) { ` +
    `printf "line %d %s é日本 %s\\n", i, substr("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 1, i % 97), i * 7; ` +
    `fflush(); if (i % 200 == 199) { if ((getline line < flag) > 0) break; close(flag); system("sleep 0.03") } } }'; echo done-writing; exit 7`;
  const started = await startDetached(await host.session(), { runId: 'disconnects', command: job, launcher: 'setsid' });
  const received: Buffer[] = [];
  let reconnects = 0;
  let lastOffset = 0;
  let kills = 0;
  let offsetAtReconnect = 0;
  let drops = 0;
  const killer = (async (): Promise<void> => {
    while (kills < 20) {
      await new Promise((r) => setTimeout(r, 300));
      // Each kill cuts a tail that is streaming: it reconnected after the previous kill and has delivered data
      // through the new connection since.
      if (reconnects < kills || lastOffset <= offsetAtReconnect) continue;
      if (sshd.killConnectionChildren() > 0) kills++;
    }
    await new Promise((r) => setTimeout(r, 500));
    writeFileSync(stopFlag, 'stop\n');
  })();
  for await (const item of tailFile(host, `${started.runDir}/output.log`, { untilPid: started.pid })) {
    if (item.kind === 'data') {
      assert.equal(item.offset, lastOffset, 'batches are contiguous: nothing skipped, nothing repeated');
      received.push(item.data);
      lastOffset = item.nextOffset;
    } else if (item.kind === 'reconnected') {
      reconnects++;
      assert.equal(item.offset, lastOffset);
      offsetAtReconnect = lastOffset;
    } else if (item.kind === 'dropped') {
      // Said before the reconnect, at the offset it resumes from (the run's host state reads it: hostLink.ts).
      drops++;
      assert.equal(item.offset, lastOffset);
    } else {
      assert.fail(`unexpected ${JSON.stringify(item)}`);
    }
  }
  await killer;
  assert.equal(kills, 20);
  assert.ok(reconnects >= 20, `tail reconnected ${reconnects} times`);
  assert.ok(drops >= 20, `tail said it dropped ${drops} times`);
  const got = Buffer.concat(received);
  const remote = await host.use((s) => s.run(`sha256sum ${shellQuote(`${started.runDir}/output.log`)} | cut -c1-64`));
  assert.equal(sha256(got), remote.trim(), `received ${got.length} bytes`);
  const lines = splitLines(got);
  assert.equal(lines[lines.length - 1], 'done-writing');
  lines.slice(0, -1).forEach((l, i) => assert.ok(l.startsWith(`line ${i} `), `line ${i} delivered once, in order: ${l.slice(0, 30)}`));
  assert.ok(lines.length > 1000, `${lines.length} lines`);
  const status = await host.use((s) => runStatus(s, 'disconnects'));
  assert.equal(status.state, 'exited');
  assert.equal(status.exitCode, 7);
});

test('resuming from a stored offset yields exactly the rest of the file', async () => {
  const dir = join(sshd.home, 'resume');
  mkdirSync(dir, { recursive: true });
  const content = Buffer.from(Array.from({ length: 500 }, (_, i) => `row ${i} ${'z'.repeat(i % 13)}\n`).join(''));
  writeFileSync(join(dir, 'events.jsonl'), content);
  const first: Buffer[] = [];
  let resumeAt = 0;
  for await (const item of tailFile(host, join(dir, 'events.jsonl'))) {
    if (item.kind !== 'data') continue;
    first.push(item.data);
    resumeAt = item.nextOffset;
  }
  assert.deepEqual(Buffer.concat(first), content);
  const cut = content.indexOf('row 250');
  const rest: Buffer[] = [];
  for await (const item of tailFile(host, join(dir, 'events.jsonl'), { fromOffset: cut })) if (item.kind === 'data') rest.push(item.data);
  assert.deepEqual(Buffer.concat(rest), content.subarray(cut));
  const none: Buffer[] = [];
  for await (const item of tailFile(host, join(dir, 'events.jsonl'), { fromOffset: resumeAt })) if (item.kind === 'data') none.push(item.data);
  assert.equal(Buffer.concat(none).length, 0);
});

test('a partial last line waits for its newline; truncation below the offset is reported', async () => {
  const dir = join(sshd.home, 'trunc');
  mkdirSync(dir, { recursive: true });
  const f = join(dir, 'gpu.csv');
  writeFileSync(f, 'a,1\nb,2\nc,');
  const items = [];
  for await (const item of tailFile(host, f)) items.push(item);
  // Without a run to wait for, the tail ends at EOF and hands over the partial line as the last batch.
  assert.deepEqual(
    items.map((i) => (i.kind === 'data' ? i.data.toString() : i.kind)),
    ['a,1\nb,2\n', 'c,'],
  );
  truncateSync(f, 2);
  const after = [];
  for await (const item of tailFile(host, f, { fromOffset: 8 })) after.push(item);
  assert.equal(after[0]?.kind, 'truncated');
  assert.deepEqual(after[0], { kind: 'truncated', offset: 8, size: 2 });
  assert.deepEqual(
    after.filter((i) => i.kind === 'data').map((i) => (i.kind === 'data' ? i.data.toString() : '')),
    ['a,'],
  );
});

test('a slow consumer pauses the stream: buffered bytes stay bounded, nothing is lost', { timeout: 120_000 }, async () => {
  const dir = join(sshd.home, 'big');
  mkdirSync(dir, { recursive: true });
  const line = `${'y'.repeat(1023)}\n`;
  const content = Buffer.from(line.repeat(48 * 1024)); // 48 MiB
  writeFileSync(join(dir, 'output.log'), content);
  const stats = { buffered: 0, maxBuffered: 0, channels: 0 };
  const hash = createHash('sha256');
  let total = 0;
  let paused = false;
  for await (const item of tailFile(host, join(dir, 'output.log'), { stats })) {
    if (item.kind !== 'data') continue;
    hash.update(item.data);
    total += item.data.length;
    if (!paused && total > 4 * 1024 * 1024) {
      paused = true;
      // While we sleep, only the SSH window's worth may arrive; the next pull records what is buffered.
      await new Promise((r) => setTimeout(r, 1500));
    }
  }
  assert.ok(paused);
  assert.ok(stats.maxBuffered < 8 * 1024 * 1024, `max buffered ${stats.maxBuffered} bytes`);
  assert.equal(total, content.length);
  assert.equal(hash.digest('hex'), sha256(content));
});

test('a progress bar (\\r, no newline for seconds) reaches a log tail as it moves; a record file keeps whole lines', { timeout: 60_000 }, async () => {
  // tqdm's shape: one line rewritten with \r every 100 ms, ended by a newline only when the bar closes; then a
  // CRLF line, which must never be split between batches.
  const job = `for i in $(seq 1 25); do printf '\\r%3d%%|%s|' $((i * 4)) "$(printf '#%.0s' $(seq 1 $i))"; sleep 0.1; done; printf '\\n'; printf 'crlf line\\r\\n'; exit 0`;
  const started = await startDetached(await host.session(), { runId: 'progress', command: job, launcher: 'setsid' });
  const path = `${started.runDir}/output.log`;
  const logBatches: Buffer[] = [];
  let batchesBeforeNewline = 0;
  for await (const item of tailFile(host, path, { untilPid: started.pid, partialLines: true })) {
    if (item.kind !== 'data') continue;
    if (!Buffer.concat(logBatches).includes(0x0a) && !item.data.includes(0x0a)) batchesBeforeNewline++;
    logBatches.push(item.data);
  }
  const log = Buffer.concat(logBatches);
  const remote = await host.use((s) => s.run(`sha256sum ${shellQuote(path)} | cut -c1-64`));
  assert.equal(sha256(log), remote.trim());
  assert.ok(batchesBeforeNewline >= 5, `the bar was seen moving: ${batchesBeforeNewline} batches before its newline`);
  for (let i = 0; i < logBatches.length - 1; i++) {
    const b = logBatches[i]!;
    assert.ok(!(b[b.length - 1] === 0x0d && logBatches[i + 1]![0] === 0x0a), `batch ${i} splits a CRLF`);
  }
  // The same bytes as a record file: whole lines only, so the bar arrives in one piece with its newline.
  const records: Buffer[] = [];
  for await (const item of tailFile(host, path)) if (item.kind === 'data') records.push(item.data);
  assert.ok(
    records.every((b) => b[b.length - 1] === 0x0a),
    'every record batch ends at a newline',
  );
  assert.ok(Buffer.concat(records).equals(log));
});

test('a line with no end is delivered in bounded pieces, in order, not held whole', { timeout: 60_000 }, async () => {
  const dir = join(sshd.home, 'runaway');
  mkdirSync(dir, { recursive: true });
  const blob = Buffer.alloc(3 * 1024 * 1024, 0x41); // 3 MiB and not one newline (a binary dump, a runaway print)
  writeFileSync(join(dir, 'events.jsonl'), blob);
  const sizes: number[] = [];
  const got: Buffer[] = [];
  for await (const item of tailFile(host, join(dir, 'events.jsonl')))
    if (item.kind === 'data') {
      sizes.push(item.data.length);
      got.push(item.data);
    }
  assert.ok(Buffer.concat(got).equals(blob));
  assert.ok(sizes.length > 3, `${sizes.length} pieces`);
  assert.ok(Math.max(...sizes) < 2 * 1024 * 1024, `largest piece ${Math.max(...sizes)} bytes`);
});
