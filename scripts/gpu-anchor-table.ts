// `npm run bench:gpu-anchors [-- --write-readme] [files…]`: issue 34's throughput against the published anchors from
// bench/gpu/throughput-<gpu>-<date>.json (issue 34's files, or the files named), printed, or written into README.md
// between its gpu-anchor-throughput markers. --include-dry-run also reads a CPU dry run (test_device_run_34.py).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { anchorFiles, parseAnchorFile, renderAnchorTable, withAnchorTable } from '../bench/gpu/anchorThroughput';
import { ROOT } from '../bench/gpu/vramCheck';

const args = process.argv.slice(2);
const named = args.filter((a) => !a.startsWith('--'));
const files = (named.length ? named : anchorFiles()).map((p) => parseAnchorFile(readFileSync(p, 'utf8'), p));
const dry = files.find((f) => f.dry_run);
if (dry && !args.includes('--include-dry-run')) {
  console.error(`${dry.path}: a CPU dry run, not a measurement (--include-dry-run reads dry runs)`);
  process.exit(2);
}
const table = renderAnchorTable(files);
if (args.includes('--write-readme')) {
  const path = join(ROOT, 'README.md');
  writeFileSync(path, withAnchorTable(readFileSync(path, 'utf8'), table));
  console.log(`README.md: trainer speed table from ${files.length} file(s)`);
} else {
  console.log(table);
}
