// Runs the provider suites (cloud API emulators, real loopback sshd) serially, then prints the orphan
// count the fault matrix measured as the very last line, after node's own test summary.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const report = join('.test-output', 'providers-matrix.json');
const motoReport = join('.test-output', 'providers-moto.json');
mkdirSync('.test-output', { recursive: true });
rmSync(report, { force: true });
rmSync(motoReport, { force: true });
const r = spawnSync(process.execPath, ['scripts/node-tests.mjs', '--serial', 'test/unit/providers', 'test/integration/providers'], {
  stdio: 'inherit',
  env: { ...process.env, RFT_PROVIDERS_REPORT: report, RFT_MOTO_REPORT: motoReport },
});
// EC2 against moto (an implementation of EC2's API by others), from test/integration/providers/ec2Moto.test.ts.
const moto = existsSync(motoReport) ? JSON.parse(readFileSync(motoReport, 'utf8')) : undefined;
const motoLine = moto
  ? `ec2 against moto ${moto.version}: ${moto.passed} passed, ${moto.failed} failed`
  : 'ec2 against moto: did not run (moto could not be installed or started)';
if (!existsSync(report)) {
  console.log(motoLine);
  console.log('orphaned instances: unknown (the fault matrix did not finish)');
  process.exit(r.status || 1);
}
const t = JSON.parse(readFileSync(report, 'utf8'));
console.log('\nfault matrix (provider, case, instances launched / still billing, running or stopped / kept by policy):');
for (const row of t.rows ?? []) console.log(`  ${row}`);
// The control case (a launch with no guard, SSH never answering) must show one orphan, reported apart from the totals.
if (t.control)
  console.log(
    `control (unguarded launch, SSH never answers): ${t.control.orphaned} of ${t.control.launched} launched left billing, as it should be without the guard`,
  );
console.log(motoLine);
console.log(`orphaned instances: ${t.orphaned} of ${t.launched} launched across ${t.cases} fault cases (running or stopped, kept by policy excluded)`);
process.exit(r.status ?? 1);
