// The same mocha suite under @vscode/test-electron, for machines that can download VS Code.
// (This machine cannot reach the internet; `npm run test:vscode` runs the suite in code-server instead.)
import { runTests } from '@vscode/test-electron';
import { spawnSync } from 'node:child_process';
import { buildSuite } from './buildSuite';
import { REPO_ROOT } from '../harness/codeServer';
import { join } from 'node:path';

async function main(): Promise<number> {
  const b = spawnSync('npm', ['run', '-s', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (b.status !== 0) return 1;
  const testsEntry = await buildSuite();
  await runTests({
    version: '1.100.3',
    extensionDevelopmentPath: REPO_ROOT,
    extensionTestsPath: testsEntry,
    launchArgs: [join(REPO_ROOT, 'examples'), '--disable-workspace-trust', '--disable-extensions'],
  });
  return 0;
}

main().then(
  (c) => process.exit(c),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
