// `npm run bench -- upload-many`: first sync of 10,000 files (100 MB) to a fresh remote folder: ours (tar streams
// over ssh2 exec channels into a staging dir, renamed into place) against `rsync -a` over OpenSSH, A B A B …;
// `scp -r` is measured once for the table. Sizes: RFT_BENCH_FILES, RFT_BENCH_TREE_MB.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import { SSH_CODE, benchTreeRoot, commandLine, startBenchHost, makeTree, runTool } from './lib/sshBench';
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
  // The local tree and every tree sent (each pair writes two) share one root: see benchTreeRoot.
  const trees = benchTreeRoot('rft-bench-many-', (2 * pairs + 2) * mb * 1_000_000);
  const local = join(trees.path, 'local');
  makeTree(local, files, mb * 1_000_000);
  // Trees sent stay until the end (in memory, (2 x pairs + 1) x 100 MB): a deletion between runs would leave
  // work for the next run of either tool on a disk-backed root.
  let n = 0;
  let refCommand = '';
  try {
    const result = await measurePairs(
      pairs,
      async () => {
        const dir = join(trees.path, `ours-${n++}`);
        const host = bench.newHost();
        const ms = await timeMs(async () => {
          const r = await bench.shipped.syncWorkspace(await host.session(), { localRoot: local, remoteDir: dir });
          if (r.uploaded !== files) throw new Error(`sent ${r.uploaded} of ${files}`);
        });
        host.close();
        return ms;
      },
      async () => {
        const dir = join(trees.path, `rsync-${n}`);
        const args = ['-a', '-e', bench.rsyncRsh(), `${local}/`, `${bench.dest}:${dir}/`];
        refCommand = commandLine('rsync', args);
        const ms = await timeMs(() => runTool('rsync', args));
        return ms;
      },
    );
    const scpDir = join(trees.path, 'scp-r');
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
    printTable(`first sync of ${files} files (${mb} MB) over ${bench.link ?? 'loopback'} sshd, trees in ${trees.where}, ${pairs} pairs (ms, lower is better)`, [
      ['ours (tar streams over exec channels)', median(result.ours)],
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
      samples: result,
      covers: SSH_CODE,
      referenceCommand: refCommand,
      extra: {
        cipher: bench.cipher,
        ...(bench.link ? { link: bench.link } : {}),
        ...bench.shippedFields,
        trees: trees.where,
        scp_r_ms: Math.round(scpMs),
        [scpTimedOut ? 'scp_r_ratio_at_most' : 'scp_r_ratio']: Math.round((median(result.ours) / scpMs) * 1000) / 1000,
        files,
        pairs,
      },
    });
  } finally {
    trees.remove();
    await bench.stop();
  }
}

if (require.main === module)
  void uploadManyBench({ name: 'upload-many', goal: '<= 1.0' }).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
