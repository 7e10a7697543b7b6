// `npm run bench:gpu-accuracy [-- --write]`: fits the throughput model to the measured cases of bench/gpu/vram-*.json,
// with leave-one-model-out errors, and the VRAM estimate's error on the same files; prints the README block, or
// with --write writes src/core/gpu/estimateAccuracy.json (what the editor, the Start confirmation and the CLI
// quote as each estimate's band and basis) and README.md between its gpu-throughput-table markers.
// test/unit/gpu/throughputFit.test.ts fails when either is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { measuredAccuracy, renderThroughputTable, withThroughputTable } from '../bench/gpu/throughputCases';
import { ROOT } from '../bench/gpu/vramCheck';

const report = measuredAccuracy();
const table = renderThroughputTable(report);
// Never a silent skip: measured cases the VRAM fit leaves out are named, with why, on stderr (stdout stays the block).
for (const c of report.vram.leftOut) console.error(`left out of the VRAM fit: ${c.case}: ${c.why}`);
if (process.argv.includes('--write')) {
  writeFileSync(join(ROOT, 'src/core/gpu/estimateAccuracy.json'), JSON.stringify(report, null, 2) + '\n');
  const readme = join(ROOT, 'README.md');
  writeFileSync(readme, withThroughputTable(readFileSync(readme, 'utf8'), table));
  const fits = Object.entries(report.throughput.gpus).map(([g, f]) => `${g} ${f.cases} cases, held-out error ±${(f.heldOutMaxAbs * 100).toFixed(1)}%`);
  console.log(`estimateAccuracy.json and README.md: ${fits.join('; ')}`);
} else {
  console.log(table);
}
