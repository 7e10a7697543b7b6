import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildVsix, listVsix } from '../harness/vsix';
import { REPO_ROOT } from '../harness/codeServer';

test('vsix: npm run package builds remote-finetune-<version>.vsix with only what ships', () => {
  const vsix = buildVsix();
  assert.match(vsix, /remote-finetune-\d+\.\d+\.\d+\.vsix$/);
  const files = listVsix(vsix);
  // vsce stores the README as readme.md.
  const inExt = files.filter((f) => f.startsWith('extension/')).map((f) => f.slice('extension/'.length).replace(/^README\.md$/i, 'readme.md'));
  for (const must of [
    'package.json',
    'readme.md',
    'dist/extension.js',
    'dist/configWorker.js',
    'dist/cli.js',
    'dist/vendor/ssh2.js',
    'dist/vendor/client-ec2.js',
    'dist/vendor/client-ssm.js',
    'dist/vendor/client-pricing.js',
    'media/icon.png',
  ]) {
    assert.ok(inExt.includes(must), `${must} is missing from the VSIX`);
  }
  assert.ok(
    inExt.some((f) => f.startsWith('python-runner/') && f.endsWith('.py')),
    'python-runner must ship inside the VSIX',
  );
  const forbidden = inExt.filter(
    (f) =>
      f.startsWith('src/') ||
      f.startsWith('test/') ||
      f.startsWith('node_modules/') ||
      f.startsWith('bench/') ||
      f.endsWith('.map') ||
      f.endsWith('.ts') ||
      f.includes('/tests/') ||
      f.includes('/tests_training/') ||
      f.startsWith('.gpu-wheels/') ||
      f.includes('__pycache__') ||
      f.startsWith('.ci/'),
  );
  assert.deepEqual(forbidden, [], 'sources, tests, maps and node_modules stay out of the VSIX');
  console.log(`vsix: ${inExt.length} files`);
  // Heavy libraries load lazily: the activation bundle only names their vendor files, it does not hold them.
  const ext = readFileSync(join(REPO_ROOT, 'dist/extension.js'), 'utf8');
  // Tested with RegExp.test, never assert.match: a failing match puts the 3 MB bundle into the error, and Node 20's
  // test runner then spins for hours parsing the report (CI once timed out that way, its last line 'vsix: …').
  for (const vendor of ['ssh2', 'client-ec2', 'client-ssm', 'client-pricing'])
    assert.ok(ext.includes(`vendor/${vendor}.js`), `the activation bundle names dist/vendor/${vendor}.js`);
  assert.ok(!/SSH-2\.0-ssh2js/.test(ext), 'ssh2 itself must not be in the activation bundle');
  const sdk = /@aws-sdk\/middleware-signing|SignatureV4/.exec(ext);
  assert.ok(!sdk, `the AWS SDK must not be in the activation bundle: '${sdk?.[0]}' at ${sdk?.index} of ${ext.length} bytes`);
  assert.ok(/SSH-2\.0-ssh2js/.test(readFileSync(join(REPO_ROOT, 'dist/vendor/ssh2.js'), 'utf8')), 'ssh2 is in its vendor bundle');
  console.log(`activation bundle: ${(ext.length / 1024).toFixed(0)} KiB; ssh2 and the AWS SDK in dist/vendor, loaded on first use`);
});
