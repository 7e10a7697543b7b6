// `npm run bench -- upload-many`: first sync of 10,000 files (100 MB) to a fresh remote folder: ours (two tar
// streams over ssh2 exec channels into a staging dir, renamed into place) against `rsync -a` over OpenSSH, A B A B …;
// `scp -r` is measured once for the table. Sizes: RFT_BENCH_FILES, RFT_BENCH_TREE_MB.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import { startBenchHost, makeTree, runTool, ssh2NativeCrypto } from './lib/sshBench';
import { syncWorkspace } from '../src/core/ssh/sync';

async function main(): Promise<void> {
  const files = Number(process.env.RFT_BENCH_FILES ?? 10_000);
  const mb = Number(process.env.RFT_BENCH_TREE_MB ?? 100);
  const pairs = Number(process.env.RFT_BENCH_PAIRS ?? 5);
  const bench = await startBenchHost();
  const local = mkdtempSync(join(tmpdir(), 'rft-bench-many-'));
  makeTree(local, files, mb * 1_000_000);
  let n = 0;
  try {
    const result = await measurePairs(pairs, async () => {
      const dir = `ours-${n++}`;
      const host = bench.newHost();
      const ms = await timeMs(async () => {
        const r = await syncWorkspace(await host.session(), { localRoot: local, remoteDir: dir });
        if (r.uploaded !== files) throw new Error(`sent ${r.uploaded} of ${files}`);
      });
      host.close();
      rmSync(join(bench.sshd.home, dir), { recursive: true, force: true });
      rmSync(join(bench.sshd.home, `.${dir}.rft-manifest.json`), { force: true });
      return ms;
    }, async () => {
      const dir = join(bench.sshd.home, `rsync-${n}`);
      const ms = await timeMs(() => runTool('rsync', ['-a', '-e', bench.rsyncRsh(), `${local}/`, `${bench.dest}:${dir}/`]));
      rmSync(dir, { recursive: true, force: true });
      return ms;
    });
    const scpDir = join(bench.sshd.home, 'scp-r');
    const scpMs = await timeMs(() => runTool('scp', ['-r', ...bench.scpArgv(), local, `${bench.dest}:${scpDir}`]));
    rmSync(scpDir, { recursive: true, force: true });
    printTable(`first sync of ${files} files (${mb} MB) over loopback sshd, ${pairs} pairs (ms, lower is better)`, [
      ['ours (2 tar streams over exec channels)', median(result.ours)],
      ['rsync -a', median(result.reference)],
      ['scp -r (once)', scpMs],
      ['ours, each', result.ours.map((x) => x.toFixed(0)).join(' ')],
      ['rsync, each', result.reference.map((x) => x.toFixed(0)).join(' ')],
    ]);
    printVerdict({ bench: 'upload-many', metric: `first sync time ms (${files} files, ${mb} MB)`, ours: median(result.ours), reference: median(result.reference), goal: '<= 1.0', extra: { cipher: bench.cipher, ssh2_native_crypto: ssh2NativeCrypto(), scp_r_ms: Math.round(scpMs), scp_r_ratio: Math.round((median(result.ours) / scpMs) * 1000) / 1000, files, pairs } });
  } finally {
    rmSync(local, { recursive: true, force: true });
    await bench.stop();
  }
}

void main().catch((err: unknown) => { console.error(err); process.exit(1); });
