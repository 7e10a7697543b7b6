// `npm run bench -- <name>` runs bench/<name>.ts in its own process; the last line it prints is the JSON verdict.
import { existsSync, readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { RESULTS_FILE, parseVerdict, recordVerdict } from './lib/results';
import { join } from 'node:path';

const name = process.argv[2];
const available = readdirSync(__dirname)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts')
  .map((f) => f.replace(/\.ts$/, ''));
if (!name || !existsSync(join(__dirname, `${name}.ts`))) {
  console.error(`usage: npm run bench -- <name>\navailable: ${available.join(', ')}`);
  process.exit(2);
}
// ssh2 only from the shipped vendor bundle (lib/shipped.ts), never node_modules' copy with its native addon.
const BENCH_PRELOAD = ['--require', join(__dirname, 'lib', 'noNodeModulesSsh2.cjs')];
// Output goes through as it comes; the last line, the verdict, is also recorded in bench/results/latest.jsonl
// (the README's figures are made from that file), unless RFT_BENCH_RECORD=0 (trial runs at small sizes).
const child = spawn(process.execPath, [...BENCH_PRELOAD, '--import', 'tsx', '--expose-gc', join(__dirname, `${name}.ts`), ...process.argv.slice(3)], {
  stdio: ['inherit', 'pipe', 'inherit'],
});
let tail = '';
child.stdout.on('data', (d: Buffer) => {
  process.stdout.write(d);
  tail = (tail + d.toString()).slice(-65536);
});
child.on('close', (code) => {
  const last = tail.trim().split('\n').pop() ?? '';
  if (process.env.RFT_BENCH_RECORD !== '0' && last.startsWith('{')) {
    try {
      recordVerdict(parseVerdict(last), join(__dirname, '..', RESULTS_FILE));
    } catch (e) {
      console.error(`not recorded: ${(e as Error).message}`);
    }
  }
  process.exit(code ?? 1);
});
