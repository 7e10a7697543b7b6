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
      f.includes('__pycache__') ||
      f.startsWith('.ci/'),
  );
  assert.deepEqual(forbidden, [], 'sources, tests, maps and node_modules stay out of the VSIX');
  console.log(`vsix: ${inExt.length} files`);
  // Heavy libraries load lazily: the activation bundle only names their vendor files, it does not hold them.
  const ext = readFileSync(join(REPO_ROOT, 'dist/extension.js'), 'utf8');
  assert.match(ext, /vendor\/ssh2\.js/);
  assert.match(ext, /vendor\/client-ec2\.js/);
  assert.match(ext, /vendor\/client-ssm\.js/);
  assert.doesNotMatch(ext, /SSH-2\.0-ssh2js/, 'ssh2 itself must not be in the activation bundle');
  assert.doesNotMatch(ext, /@aws-sdk\/middleware-signing|SignatureV4/, 'the AWS SDK must not be in the activation bundle');
  assert.match(readFileSync(join(REPO_ROOT, 'dist/vendor/ssh2.js'), 'utf8'), /SSH-2\.0-ssh2js/);
  console.log(`activation bundle: ${(ext.length / 1024).toFixed(0)} KiB; ssh2 and the AWS SDK in dist/vendor, loaded on first use`);
});
