// Entry point the VS Code host calls (extensionTestsPath): runs every *.test.js beside it with mocha.
// Results go to the console and to the report file named in run-config.json beside this bundle (the
// extension host does not inherit the runner's environment), so the runner outside can print them.
import { appendFileSync, existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type MochaType from 'mocha';

export async function run(): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Mocha = require('mocha') as typeof MochaType;
  const configFile = join(__dirname, 'run-config.json');
  const config = (existsSync(configFile) ? JSON.parse(readFileSync(configFile, 'utf8')) : {}) as {
    report?: string;
    grep?: string;
    env?: Record<string, string>;
  };
  // Tests read their settings (report path, repo root, workspace) from the environment.
  for (const [k, v] of Object.entries(config.env ?? {})) process.env[k] = v;
  const report = config.report;
  const write = (line: string): void => {
    console.log(line);
    if (report) appendFileSync(report, `${line}\n`);
  };
  const mocha = new Mocha({ ui: 'tdd', timeout: Number(process.env.RFT_TEST_TIMEOUT ?? 60_000), color: false, reporter: 'base' });
  const only = config.grep;
  if (only) mocha.grep(only);
  for (const f of readdirSync(__dirname)
    .filter((n) => n.endsWith('.test.js'))
    .sort())
    mocha.addFile(join(__dirname, f));
  await new Promise<void>((resolve, reject) => {
    let passed = 0;
    let failed = 0;
    const runner = mocha.run(() => {
      write(`${passed} passed, ${failed} failed`);
      if (failed > 0) reject(new Error(`${failed} tests failed`));
      else if (passed === 0) reject(new Error('no tests ran'));
      else resolve();
    });
    runner.on('pass', (t) => {
      passed++;
      write(`  ✔ ${t.fullTitle()} (${t.duration ?? 0} ms)`);
    });
    runner.on('fail', (t, err: Error) => {
      failed++;
      write(
        `  ✖ ${t.fullTitle()}\n      ${String(err?.stack ?? err)
          .split('\n')
          .join('\n      ')}`,
      );
    });
    runner.on('pending', (t) => write(`  - ${t.fullTitle()} (skipped)`));
  });
}
