// Node 20's test runner takes no globs: find the *.test.ts files under the given folders and run them.
import { readdirSync, statSync, existsSync, mkdtempSync, rmSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

const args = process.argv.slice(2);
const serial = args.includes('--serial');
const roots = args.filter((a) => !a.startsWith('--'));
// --exclude=<dir>: a folder another script runs on its own (test:providers prints its own last line).
const excluded = args.filter((a) => a.startsWith('--exclude=')).map((a) => a.slice('--exclude='.length).replace(/\/$/, ''));
const files = [];
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'fixtures' && name !== 'node_modules' && !excluded.includes(p)) walk(p);
    } else if (name.endsWith('.test.ts')) files.push(p);
  }
}
for (const r of roots) {
  if (!existsSync(r)) continue;
  if (statSync(r).isDirectory()) walk(r);
  else files.push(r);
}
files.sort();
if (files.length === 0) {
  console.error(`no test files under ${roots.join(', ')}`);
  process.exit(1);
}
// --test-force-exit: a test that fails half-way can leave a handle open (a socket, a child's pipe); the suite
// must still end (test:leftovers then finds and stops any process it left).
const nodeArgs = ['--import', 'tsx', '--test', '--test-force-exit', '--test-reporter=spec', ...(serial ? ['--test-concurrency=1'] : []), ...files];
// Every temporary folder the tests make (os.tmpdir(), Python's tempfile, mktemp) goes under one folder of this run,
// removed when it ends: a test that fails before its cleanup, or forgets it, no longer leaves rft-* folders in /tmp
// (a unit run used to leave about ninety). A suite that fails keeps it, with the logs of the VS Code instances,
// hosts and runs it started, and says where; so does RFT_KEEP_TMP=1.
const runTmp = mkdtempSync(join(tmpdir(), 'rft-t-'));
// Traversable by other users (not listable), as /tmp is: the tests that run a step as nobody reach their own folders.
chmodSync(runTmp, 0o711);
const r = spawnSync(process.execPath, nodeArgs, { stdio: 'inherit', env: { ...process.env, TMPDIR: runTmp } });
if (process.env.RFT_KEEP_TMP === '1' || r.status !== 0) console.log(`temporary files of this run kept in ${runTmp}`);
else rmSync(runTmp, { recursive: true, force: true, maxRetries: 3 });
process.exit(r.status ?? 1);
