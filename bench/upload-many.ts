// `npm run bench -- upload-many`: first sync of 10,000 files (100 MB) to a fresh remote folder: ours (two tar
// streams over ssh2 exec channels into a staging dir, renamed into place) against `rsync -a` over OpenSSH, A B A B …;
// `scp -r` is measured once for the table. Sizes: RFT_BENCH_FILES, RFT_BENCH_TREE_MB.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import { startBenchHost, makeTree, runTool, ssh2NativeCrypto } from './lib/sshBench';
import { syncWorkspace } from '../src/core/ssh/sync';
import type { ShapingOptions } from '../test/support/shapingProxy';

/**
 * The many-files bench on loopback (`upload-many`) or through the shaped link (`upload-many-wan`). There
 * `scp -r` pays round trips per file (minutes for 10,000 files at 40 ms), so it runs once under a time limit
 * (RFT_BENCH_SCP_R_LIMIT_S) and, if it hits it, the verdict says so and gives the ratio as a bound.
 */
export async function uploadManyBench(opts: { name: string; wan?: ShapingOptions; goal: string; scpLimitS?: number }): Promise<void> {
  const files = Number(process.env.RFT_BENCH_FILES ?? 10_000);
  const mb = Number(process.env.RFT_BENCH_TREE_MB ?? 100);
  const pairs = Number(process.env.RFT_BENCH_PAIRS ?? 5);
  const bench = await startBenchHost(opts.wan ? { wan: opts.wan } : {});
  const local = mkdtempSync(join(tmpdir(), 'rft-bench-many-'));
  makeTree(local, files, mb * 1_000_000);
  // Trees sent are removed after the last pair, not between runs: deleting 10,000 files leaves the file system
  // work to do (journal, discards on this VM's disk) that would land in the next run, of either tool.
  const sent: string[] = [];
  let n = 0;
  try {
    const result = await measurePairs(
      pairs,
      async () => {
        const dir = `ours-${n++}`;
        const host = bench.newHost();
        const ms = await timeMs(async () => {
          const r = await syncWorkspace(await host.session(), { localRoot: local, remoteDir: dir });
          if (r.uploaded !== files) throw new Error(`sent ${r.uploaded} of ${files}`);
        });
        host.close();
        sent.push(join(bench.sshd.home, dir), join(bench.sshd.home, `.${dir}.rft-manifest.json`));
        return ms;
      },
      async () => {
        const dir = join(bench.sshd.home, `rsync-${n}`);
        const ms = await timeMs(() => runTool('rsync', ['-a', '-e', bench.rsyncRsh(), `${local}/`, `${bench.dest}:${dir}/`]));
        sent.push(dir);
        return ms;
      },
    );
    const scpDir = join(bench.sshd.home, 'scp-r');
    const limitMs = (opts.scpLimitS ?? Number.POSITIVE_INFINITY) * 1000;
    let scpTimedOut = false;
    const scpMs = await timeMs(() =>
      runTool('scp', ['-r', ...bench.scpArgv(), local, `${bench.dest}:${scpDir}`], Number.isFinite(limitMs) ? { timeoutMs: limitMs } : {}).catch(
        (e: unknown) => {
          if (!(e instanceof Error && /timed out/.test(e.message))) throw e;
          scpTimedOut = true;
        },
      ),
    );
    rmSync(scpDir, { recursive: true, force: true });
    printTable(`first sync of ${files} files (${mb} MB) over ${bench.link ?? 'loopback'} sshd, ${pairs} pairs (ms, lower is better)`, [
      ['ours (2 tar streams over exec channels)', median(result.ours)],
      ['rsync -a', median(result.reference)],
      [scpTimedOut ? `scp -r (once, stopped at the ${opts.scpLimitS} s limit)` : 'scp -r (once)', scpMs],
      ['ours, each', result.ours.map((x) => x.toFixed(0)).join(' ')],
      ['rsync, each', result.reference.map((x) => x.toFixed(0)).join(' ')],
    ]);
    printVerdict({
      bench: opts.name,
      metric: `first sync time ms (${files} files, ${mb} MB)`,
      ours: median(result.ours),
      reference: median(result.reference),
      goal: opts.goal,
      extra: {
        cipher: bench.cipher,
        ...(bench.link ? { link: bench.link } : {}),
        ssh2_native_crypto: ssh2NativeCrypto(),
        scp_r_ms: Math.round(scpMs),
        [scpTimedOut ? 'scp_r_ratio_at_most' : 'scp_r_ratio']: Math.round((median(result.ours) / scpMs) * 1000) / 1000,
        files,
        pairs,
      },
    });
  } finally {
    for (const d of sent) rmSync(d, { recursive: true, force: true });
    rmSync(local, { recursive: true, force: true });
    await bench.stop();
  }
}

if (require.main === module)
  void uploadManyBench({ name: 'upload-many', goal: '<= 1.0' }).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
