// `npm run bench:readme`: rewrites the README's benchmark table from bench/results/latest.jsonl (which
// `npm run bench -- <name>` updates with each bench's verdict line). `--check` only says whether it is current.
import { readFileSync, writeFileSync } from 'node:fs';
import { readResults, renderTable, staleVerdicts, withTable } from '../bench/lib/results';

function main(): number {
  const readme = readFileSync('README.md', 'utf8');
  let next: string;
  try {
    const results = readResults();
    next = withTable(readme, renderTable(results, staleVerdicts(results)));
  } catch (e) {
    console.error(`bench:readme: ${(e as Error).message}`);
    return 2;
  }
  if (process.argv.includes('--check')) {
    if (next !== readme) {
      console.error('bench:readme: the README table differs from bench/results/latest.jsonl; run npm run bench:readme');
      return 1;
    }
    return 0;
  }
  writeFileSync('README.md', next);
  console.log(`bench:readme: ${readResults().length} benchmark(s) written to README.md`);
  return 0;
}

process.exit(main());
