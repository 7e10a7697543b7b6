// `npm run bench -- upload`: one large file to a fresh remote folder, our sync (a tar stream over an ssh2 exec
// channel, hashed while it streams, fresh connection each time) against OpenSSH's scp, A B A B … on loopback.
// Size: RFT_BENCH_UPLOAD_MB (default 1024 = 1 GiB).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import { SSH_CODE, commandLine, startBenchHost, makeRandomFile, runTool } from './lib/sshBench';
import type { ShapingOptions } from '../test/support/shapingProxy';

/** The upload bench on loopback (`upload`) or through the shaped link (`upload-wan`, see lib/wan.ts). */
export async function uploadBench(opts: { name: string; wan?: ShapingOptions; goal: string }): Promise<void> {
  const mb = Number(process.env.RFT_BENCH_UPLOAD_MB ?? 1024);
  const pairs = Number(process.env.RFT_BENCH_PAIRS ?? 5);
  const bench = await startBenchHost(opts.wan ? { wan: opts.wan } : {});
  const local = mkdtempSync(join(tmpdir(), 'rft-bench-up-'));
  const file = join(local, 'model.safetensors');
  makeRandomFile(file, mb);
  const bytes = statSync(file).size;
  let n = 0;
  let refCommand = '';
  try {
    const result = await measurePairs(
      pairs,
      async () => {
        const dir = `bench-ours-${n++}`;
        const host = bench.newHost();
        const ms = await timeMs(async () => {
          // RFT_BENCH_STRIPES: a trial knob to compare stripe counts; unset, the sync decides as it does for users.
          await bench.shipped.syncWorkspace(await host.session(), {
            localRoot: local,
            remoteDir: dir,
            ...(process.env.RFT_BENCH_STRIPES ? { stripes: Number(process.env.RFT_BENCH_STRIPES) } : {}),
          });
        });
        host.close();
        if (statSync(join(bench.sshd.home, dir, 'model.safetensors')).size !== bytes) throw new Error('short upload');
        rmSync(join(bench.sshd.home, dir), { recursive: true, force: true });
        return bytes / 1048576 / (ms / 1000);
      },
      async () => {
        const target = join(bench.sshd.home, `scp-${n}.bin`);
        const args = [...bench.scpArgv(), file, `${bench.dest}:${target}`];
        refCommand = commandLine('scp', args);
        const ms = await timeMs(() => runTool('scp', args));
        if (statSync(target).size !== bytes) throw new Error('short scp');
        rmSync(target, { force: true });
        return bytes / 1048576 / (ms / 1000);
      },
    );
    printTable(`upload of one ${mb} MiB file over ${bench.link ?? 'loopback'} sshd, ${pairs} pairs (MiB/s, higher is better)`, [
      ['ours (sync: byte ranges over 4 exec channels, stripes.ts)', median(result.ours)],
      ['scp', median(result.reference)],
      ['ours, each', result.ours.map((x) => x.toFixed(1)).join(' ')],
      ['scp, each', result.reference.map((x) => x.toFixed(1)).join(' ')],
    ]);
    printVerdict({
      bench: opts.name,
      metric: `throughput MiB/s (${mb} MiB file)`,
      ours: median(result.ours),
      reference: median(result.reference),
      goal: opts.goal,
      samples: result,
      covers: SSH_CODE,
      referenceCommand: refCommand,
      extra: { cipher: bench.cipher, ...(bench.link ? { link: bench.link } : {}), ...bench.shippedFields, size_mib: mb, pairs },
    });
  } finally {
    rmSync(local, { recursive: true, force: true });
    await bench.stop();
  }
}

if (require.main === module)
  void uploadBench({ name: 'upload', goal: '>= 1.0' }).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
