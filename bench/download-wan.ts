// `npm run bench -- download-wan`: a run's checkpoint folder (one 1 GiB file and its small companions)
// brought back through the shaping proxy, 40 ms RTT at 1 Gbit/s (lib/wan.ts): ours (downloadFolder: large
// files in stripes, the rest in one tar) vs `scp -r` of the same folder, A B A B …, fresh connection each.
// Size: RFT_BENCH_DOWNLOAD_MB (default 1024). Goal: 2× scp.
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import { SSH_CODE, commandLine, startBenchHost, makeRandomFile, runTool } from './lib/sshBench';
import { wanLink } from './lib/wan';

async function main(): Promise<void> {
  const mb = Number(process.env.RFT_BENCH_DOWNLOAD_MB ?? 1024);
  const pairs = Number(process.env.RFT_BENCH_PAIRS ?? 5);
  const bench = await startBenchHost({ wan: wanLink() });
  const remote = join(bench.sshd.home, 'run', 'checkpoint-1000');
  mkdirSync(remote, { recursive: true });
  makeRandomFile(join(remote, 'model.safetensors'), mb);
  writeFileSync(join(remote, 'config.json'), '{"architectures": ["LlamaForCausalLM"]}\n');
  writeFileSync(join(remote, 'trainer_state.json'), '{"global_step": 1000}\n');
  const bytes = statSync(join(remote, 'model.safetensors')).size;
  const local = mkdtempSync(join(tmpdir(), 'rft-bench-down-'));
  let n = 0;
  let refCommand = '';
  try {
    const check = (dir: string): void => {
      if (statSync(join(dir, 'model.safetensors')).size !== bytes) throw new Error(`short download into ${dir}`);
    };
    const result = await measurePairs(
      pairs,
      async () => {
        const dest = join(local, `ours-${n++}`);
        const host = bench.newHost();
        const ms = await timeMs(async () => {
          await bench.shipped.downloadFolder(await host.session(), remote, dest);
        });
        host.close();
        check(dest);
        rmSync(dest, { recursive: true, force: true });
        return bytes / 1048576 / (ms / 1000);
      },
      async () => {
        const dest = join(local, `scp-${n}`);
        const args = ['-r', ...bench.scpArgv(), `${bench.dest}:${remote}`, dest];
        refCommand = commandLine('scp', args);
        const ms = await timeMs(() => runTool('scp', args));
        check(dest);
        rmSync(dest, { recursive: true, force: true });
        return bytes / 1048576 / (ms / 1000);
      },
    );
    printTable(`download of a checkpoint folder (${mb} MiB file) over ${bench.link ?? 'loopback'}, ${pairs} pairs (MiB/s, higher is better)`, [
      ['ours (downloadFolder: stripes + tar)', median(result.ours)],
      ['scp -r', median(result.reference)],
      ['ours, each', result.ours.map((x) => x.toFixed(1)).join(' ')],
      ['scp, each', result.reference.map((x) => x.toFixed(1)).join(' ')],
    ]);
    printVerdict({
      bench: 'download-wan',
      metric: `throughput MiB/s (${mb} MiB checkpoint)`,
      ours: median(result.ours),
      reference: median(result.reference),
      goal: '>= 2.0',
      samples: result,
      covers: [...SSH_CODE, 'src/core/runs/sync/artifacts.ts', 'src/core/runs/sync/stripedDownload.ts', 'src/core/runs/sync/safeUntar.ts'],
      referenceCommand: refCommand,
      extra: { cipher: bench.cipher, ...(bench.link ? { link: bench.link } : {}), ...bench.shippedFields, size_mib: mb, pairs },
    });
  } finally {
    rmSync(local, { recursive: true, force: true });
    await bench.stop();
  }
}

void main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
