// `npm run bench -- resync`: the 10,000-file / 100 MB tree already on the host, synced again, first unchanged,
// then with 10 files edited; ours (local hash cache + one-round-trip remote manifest, fresh connection each
// time) against `rsync -a` over OpenSSH, A B A B …. The verdict is the worse of the two phases' ratios.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import { SSH_CODE, commandLine, startBenchHost, makeTree, runTool, treeFilePath } from './lib/sshBench';

async function main(): Promise<void> {
  const files = Number(process.env.RFT_BENCH_FILES ?? 10_000);
  const mb = Number(process.env.RFT_BENCH_TREE_MB ?? 100);
  const pairs = Number(process.env.RFT_BENCH_PAIRS ?? 5);
  const bench = await startBenchHost();
  const local = mkdtempSync(join(tmpdir(), 'rft-bench-resync-'));
  const cacheFile = join(mkdtempSync(join(tmpdir(), 'rft-bench-cache-')), 'hashes.json');
  makeTree(local, files, mb * 1_000_000);
  const oursDir = 'ours';
  const rsyncDir = join(bench.sshd.home, 'rsync');
  const ours = async (expect: number): Promise<number> => {
    const host = bench.newHost();
    let sent = -1;
    const ms = await timeMs(async () => {
      sent = (await bench.shipped.syncWorkspace(await host.session(), { localRoot: local, remoteDir: oursDir, cacheFile })).uploaded;
    });
    host.close();
    if (sent !== expect) throw new Error(`sent ${sent} files, expected ${expect}`);
    return ms;
  };
  const rsyncArgs = ['-a', '-e', bench.rsyncRsh(), `${local}/`, `${bench.dest}:${rsyncDir}/`];
  const rsync = (): Promise<number> => timeMs(() => runTool('rsync', rsyncArgs));
  try {
    await ours(files);
    await rsync();
    const unchanged = await measurePairs(pairs, () => ours(0), rsync);
    let round = 0;
    const editTen = (): void => {
      round++;
      for (let i = 0; i < 10; i++) writeFileSync(treeFilePath(local, Math.floor((i * files) / 10) + 7), `# edit ${round}.${i}\n${'x'.repeat(5000 + i)}\n`);
    };
    // Each side syncs the same 10 edits: edit, ours, rsync; edit again, ours, rsync; …
    const edited = await measurePairs(
      pairs,
      async () => {
        editTen();
        return await ours(10);
      },
      rsync,
    );
    const rU = median(unchanged.ours) / median(unchanged.reference);
    const rE = median(edited.ours) / median(edited.reference);
    printTable(`re-sync of ${files} files (${mb} MB) over loopback sshd, ${pairs} pairs (ms, lower is better)`, [
      ['unchanged: ours', median(unchanged.ours)],
      ['unchanged: rsync -a', median(unchanged.reference)],
      ['unchanged: ratio', rU],
      ['10 edited: ours', median(edited.ours)],
      ['10 edited: rsync -a', median(edited.reference)],
      ['10 edited: ratio', rE],
      ['unchanged ours, each', unchanged.ours.map((x) => x.toFixed(0)).join(' ')],
      ['unchanged rsync, each', unchanged.reference.map((x) => x.toFixed(0)).join(' ')],
      ['edited ours, each', edited.ours.map((x) => x.toFixed(0)).join(' ')],
      ['edited rsync, each', edited.reference.map((x) => x.toFixed(0)).join(' ')],
    ]);
    const worse = rE >= rU ? edited : unchanged;
    printVerdict({
      bench: 'resync',
      metric: `re-sync time ms, worse of unchanged/10-edited (${rE >= rU ? '10 edited' : 'unchanged'})`,
      ours: median(worse.ours),
      reference: median(worse.reference),
      goal: '<= 1.0',
      samples: worse,
      covers: SSH_CODE,
      referenceCommand: commandLine('rsync', rsyncArgs),
      extra: {
        cipher: bench.cipher,
        ...bench.shippedFields,
        unchanged_ratio: Math.round(rU * 1000) / 1000,
        edited_ratio: Math.round(rE * 1000) / 1000,
        files,
        pairs,
      },
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
