// Bundles the mocha suite (TypeScript) into plain CommonJS the extension host can load.
import { build } from 'esbuild';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../harness/codeServer';

// One folder per test process: two runs at once (CI never, developers sometimes) must not share a bundle.
export const SUITE_OUT = join(REPO_ROOT, 'out', `vscode-tests-${process.pid}`);

/** `folder`: the suite's tests; the mocha entry (suite/index.ts) is bundled beside them whichever folder it is. */
export async function buildSuite(folder = 'test/vscode/suite'): Promise<string> {
  const dir = join(REPO_ROOT, folder);
  const entries: Record<string, string> = { index: join(REPO_ROOT, 'test/vscode/suite/index.ts') };
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) entries[f.replace(/\.ts$/, '')] = join(dir, f);
  await build({
    entryPoints: entries,
    outdir: SUITE_OUT,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'inline',
    // mocha is resolved from the repo's node_modules at run time; vscode is the host's API.
    external: ['vscode', 'mocha', 'ssh2', '@aws-sdk/client-ec2', '@aws-sdk/client-ssm', '@aws-sdk/client-pricing', 'cpu-features'],
    logLevel: 'warning',
  });
  return join(SUITE_OUT, 'index.js');
}
