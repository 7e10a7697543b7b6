// `npm run bench -- tail`: (1) ingest: reading a finished log by byte-offset tail (fresh connection each time)
// against `ssh host cat` piped into this process, A B A B …; (2) latency: a writer appends timestamped lines
// at 5 MB/s while we follow the file; p95 of (received - written) per line must stay under 250 ms.
// The writer runs on this machine, which is the (loopback) host, so both ends read the same clock.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePairs, median, percentile, printTable, printVerdict, timeMs } from './lib/pairs';
import { SSH_CODE, commandLine, startBenchHost, runTool } from './lib/sshBench';

function makeLog(path: string, mb: number): number {
  const fd = openSync(path, 'w');
  let total = 0;
  const lines: string[] = [];
  for (let i = 0; i < 10_000; i++) lines.push(`step ${i} loss=${(2 / (1 + i / 1000)).toFixed(5)} lr=2e-4 grad_norm=${(i % 97) / 10} ${'·'.repeat(i % 40)}\n`);
  const block = Buffer.from(lines.join(''));
  while (total < mb * 1_000_000) {
    writeSync(fd, block);
    total += block.length;
  }
  closeSync(fd);
  return total;
}

const WRITER = `
const fs = require('fs');
const [path, rate, durMs] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const fd = fs.openSync(path, 'a');
const pad = 'x'.repeat(180);
const start = Date.now();
let sent = 0;
function tick() {
  const now = Date.now();
  const target = rate * (now - start) / 1000;
  let buf = '';
  while (sent + buf.length < target) buf += now + ' ' + pad + '\\n';
  if (buf) { fs.writeSync(fd, buf); sent += buf.length; }
  if (now - start < durMs) setTimeout(tick, 5); else fs.closeSync(fd);
}
tick();
`;

async function main(): Promise<void> {
  const mb = Number(process.env.RFT_BENCH_TAIL_MB ?? 200);
  const pairs = Number(process.env.RFT_BENCH_PAIRS ?? 5);
  const bench = await startBenchHost();
  const work = mkdtempSync(join(tmpdir(), 'rft-bench-tail-'));
  const log = join(bench.sshd.home, 'output.log');
  const bytes = makeLog(log, mb);
  try {
    const ingest = await measurePairs(
      pairs,
      async () => {
        const host = bench.newHost();
        let got = 0;
        const ms = await timeMs(async () => {
          for await (const item of bench.shipped.tailFile(host, log)) if (item.kind === 'data') got += item.data.length;
        });
        host.close();
        if (got !== bytes) throw new Error(`tail got ${got} of ${bytes}`);
        return bytes / 1048576 / (ms / 1000);
      },
      async () => {
        let got = 0;
        const ms = await timeMs(async () => {
          got = await runTool('ssh', [...bench.sshArgv(), `cat ${log}`], { stdoutTo: 'count' });
        });
        if (got !== bytes) throw new Error(`cat got ${got} of ${bytes}`);
        return bytes / 1048576 / (ms / 1000);
      },
    );

    // Latency at 5 MB/s for 10 s.
    const live = join(bench.sshd.home, 'live.log');
    writeFileSync(live, '');
    const writerPath = join(work, 'writer.js');
    writeFileSync(writerPath, WRITER);
    const host = bench.newHost();
    await host.session();
    const writer = spawn(process.execPath, [writerPath, live, String(5_000_000), '10000'], { stdio: 'ignore' });
    const latencies: number[] = [];
    let liveBytes = 0;
    const t0 = Date.now();
    for await (const item of bench.shipped.tailFile(host, live, { untilPid: writer.pid! })) {
      if (item.kind !== 'data') continue;
      const now = Date.now();
      liveBytes += item.data.length;
      const text = item.data.toString('latin1');
      for (let i = 0; i < text.length;) {
        const sp = text.indexOf(' ', i);
        const nl = text.indexOf('\n', i);
        if (sp < 0 || nl < 0) break;
        latencies.push(now - Number(text.slice(i, sp)));
        i = nl + 1;
      }
    }
    const liveSecs = (Date.now() - t0) / 1000;
    host.close();
    const p95 = percentile(latencies, 95);
    printTable(`tail over loopback sshd: ingest of a ${mb} MB log, ${pairs} pairs (MiB/s), and latency at 5 MB/s`, [
      ['ingest: ours (byte-offset tail)', median(ingest.ours)],
      ['ingest: ssh host cat', median(ingest.reference)],
      ['ours, each', ingest.ours.map((x) => x.toFixed(1)).join(' ')],
      ['cat, each', ingest.reference.map((x) => x.toFixed(1)).join(' ')],
      ['live: lines received', latencies.length],
      ['live: MB/s received', liveBytes / 1e6 / liveSecs],
      ['live: latency p50 ms', percentile(latencies, 50)],
      ['live: latency p95 ms', p95],
      ['live: latency max ms', latencies.reduce((a, b) => Math.max(a, b), 0)],
    ]);
    printVerdict({
      bench: 'tail',
      metric: `ingest MiB/s (${mb} MB log) vs ssh host cat`,
      ours: median(ingest.ours),
      reference: median(ingest.reference),
      goal: '>= 0.8',
      checks: [{ name: 'p95 line latency ms at 5 MB/s', value: p95, goal: '< 250' }],
      samples: ingest,
      covers: SSH_CODE,
      referenceCommand: commandLine('ssh', [...bench.sshArgv(), `cat ${log}`]),
      extra: { cipher: bench.cipher, ...bench.shippedFields, live_lines: latencies.length, pairs },
    });
  } finally {
    rmSync(work, { recursive: true, force: true });
    await bench.stop();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
