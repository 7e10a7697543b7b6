// `npm run bench:stale`: lists the benchmark verdicts whose figures no longer describe the code they measure (a
// covered path changed after the commit measured, or the figure was taken on uncommitted changes). Part of
// `npm test` as information; `--strict` makes a stale verdict fail.
import { readResults, staleVerdicts } from '../bench/lib/results';

const results = readResults();
const stale = staleVerdicts(results);
for (const v of results)
  console.log(`${stale.has(v.bench) ? 'stale  ' : 'current'} ${v.bench.padEnd(16)} ${v.date} ${stale.get(v.bench) ?? `at ${v.commit?.slice(0, 10) ?? '?'}`}`);
console.log(
  `bench:stale: ${stale.size} of ${results.length} verdict(s) stale${stale.size > 0 ? ' (re-run npm run bench -- <name>, then npm run bench:readme)' : ''}`,
);
process.exit(process.argv.includes('--strict') && stale.size > 0 ? 1 : 0);
