// `npm run bench:gpu-table [-- --write-readme] [files…]`: the table "case, estimate, measured, error" from the
// measurements in bench/gpu/vram-*.json (or the files named), printed, or written into README.md between its
// gpu-vram-table markers. No number is copied by hand: a unit test fails when the README block is stale.
// --include-dry-run also reads a CPU dry run (the training suite checks that this script reads what the harness writes).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { VramFile } from '../bench/gpu/vramCheck';
import { ROOT, measuredFiles, parseVramFile, renderTable, withTable } from '../bench/gpu/vramCheck';

const args = process.argv.slice(2);
const write = args.includes('--write-readme');
const dryOk = args.includes('--include-dry-run');
const named = args.filter((a) => !a.startsWith('--'));
const files: VramFile[] = (named.length ? named : measuredFiles()).map((p) => parseVramFile(readFileSync(p, 'utf8'), p));
for (const f of files) {
  if ((f.dry_run && !dryOk) || f.synthetic) {
    console.error(`${f.path}: ${f.synthetic ? 'synthetic' : 'a CPU dry run'}, not a measurement (--include-dry-run reads dry runs)`);
    process.exit(2);
  }
}
const table = renderTable(files);
if (write) {
  const path = join(ROOT, 'README.md');
  writeFileSync(path, withTable(readFileSync(path, 'utf8'), table));
  console.log(`README.md: table of ${files.reduce((n, f) => n + f.cases.length, 0)} cases from ${files.length} file(s)`);
} else {
  console.log(table);
}
