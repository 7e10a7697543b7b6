// Runs the mocha suite inside a real VS Code host: code-server's extension host, loaded by Chromium the
// way VS Code's own web integration tests do (extensionDevelopmentPath + extensionTestsPath payload).
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { buildSuite } from './buildSuite';
import { REPO_ROOT, ensureCodeServer, startCodeServer } from '../harness/codeServer';
import { launchChromium } from '../harness/chromium';

const TIMEOUT_MS = Number(process.env.RFT_VSCODE_TIMEOUT_MS ?? 15 * 60_000);
// --untrusted: the suite under test/vscode/untrusted, in a folder opened with workspace trust on and not granted
// (Restricted Mode), starting empty; the tests put a hostile repository's files in it.
const UNTRUSTED = process.argv.includes('--untrusted');

async function main(): Promise<number> {
  const b = spawnSync('npm', ['run', '-s', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  if (b.status !== 0) return 1;
  const testsEntry = await buildSuite(UNTRUSTED ? 'test/vscode/untrusted' : 'test/vscode/suite');
  const entry = ensureCodeServer();

  // The workspace is a throwaway copy of examples/ so tests may edit files freely.
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  if (!UNTRUSTED && existsSync(join(REPO_ROOT, 'examples'))) cpSync(join(REPO_ROOT, 'examples'), ws, { recursive: true });
  const out = join(REPO_ROOT, '.test-output/vscode');
  mkdirSync(out, { recursive: true });
  const report = join(out, `report-${process.pid}.txt`);
  writeFileSync(report, '');

  writeFileSync(
    join(dirname(testsEntry), 'run-config.json'),
    JSON.stringify({
      report,
      ...(process.env.RFT_TEST_GREP ? { grep: process.env.RFT_TEST_GREP } : {}),
      env: { RFT_TEST_REPORT: report, RFT_REPO_ROOT: REPO_ROOT, RFT_TEST_WORKSPACE: ws, RFT_TEST_OUTPUT: out },
    }),
  );
  const cs = await startCodeServer(entry, { folder: ws, untrusted: UNTRUSTED });
  const browser = await launchChromium();
  let code = 1;
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    const exit = new Promise<number>((resolve) => {
      void page.exposeFunction('codeAutomationExit', (c: number) => resolve(c));
    });
    const remote = (p: string): string => `vscode-remote://127.0.0.1:${cs.port}${p}`;
    const payload = JSON.stringify([
      ['extensionDevelopmentPath', remote(REPO_ROOT)],
      ['extensionTestsPath', remote(testsEntry.replace(/\.js$/, ''))],
    ]);
    await page.goto(`${cs.url}?folder=${encodeURIComponent(ws)}&payload=${encodeURIComponent(payload)}`);
    const timeout = new Promise<number>((resolve) => setTimeout(() => resolve(124), TIMEOUT_MS));
    code = await Promise.race([exit, timeout]);
    await page.screenshot({ path: join(out, 'workbench.png') }).catch(() => undefined);
    console.log(`extension host test run ended with code ${code}`);
    if (code === 124) console.error(`the suite did not finish within ${TIMEOUT_MS / 1000} s`);
  } finally {
    await browser.close();
    await cs.stop();
    rmSync(dirname(testsEntry), { recursive: true, force: true });
  }
  const text = readFileSync(report, 'utf8');
  process.stdout.write(`\n== VS Code host suite (code-server${UNTRUSTED ? ', untrusted folder' : ''}) ==\n${text}`);
  if (!/\d+ passed, \d+ failed/.test(text)) {
    console.error(`no result from the extension host; code-server log: ${cs.logFile()}`);
    return 1;
  }
  return code;
}

main().then(
  (c) => process.exit(c),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
