// `npm run bench -- <name>` runs bench/<name>.ts in its own process; the last line it prints is the JSON verdict.
import { existsSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const name = process.argv[2];
const available = readdirSync(__dirname).filter((f) => f.endsWith('.ts') && f !== 'run.ts').map((f) => f.replace(/\.ts$/, ''));
if (!name || !existsSync(join(__dirname, `${name}.ts`))) {
  console.error(`usage: npm run bench -- <name>\navailable: ${available.join(', ')}`);
  process.exit(2);
}
// RFT_BENCH_NATIVE_CRYPTO=0: without ssh2's optional native addon, as the VSIX runs in VS Code (see lib/noNativeCrypto.cjs).
const preload = process.env.RFT_BENCH_NATIVE_CRYPTO === '0' ? ['--require', join(__dirname, 'lib', 'noNativeCrypto.cjs')] : [];
const r = spawnSync(process.execPath, [...preload, '--import', 'tsx', '--expose-gc', join(__dirname, `${name}.ts`), ...process.argv.slice(3)], { stdio: 'inherit' });
process.exit(r.status ?? 1);
