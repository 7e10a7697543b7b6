// Services with state of their own are built once, by the composition root (src/extension.ts), and handed
// down through FeatureDeps; a feature that built its own would hold a second set (a second host-key store,
// a second ssh_config reading). Checked over the sources' call sites.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const REPO = join(__dirname, '../../..');
/** Built only in src/extension.ts. */
const ROOT_ONLY = ['createSshConnectOptions', 'createCloudProviders', 'createRunServices', 'createHostsApi', 'new HostStore'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const p = join(dir, e);
    return statSync(p).isDirectory() ? sources(p) : /\.ts$/.test(e) ? [p] : [];
  });
}

/** The files that call `name(` (a call, not its declaration or an import of it). */
function callers(files: ReadonlyMap<string, string>, name: string): string[] {
  const call = new RegExp(`(?<!function\\s)\\b${name.replace(' ', '\\s+')}\\s*\\(`);
  return [...files]
    .filter(([, text]) => call.test(text))
    .map(([f]) => f)
    .sort();
}

test('the call-site check finds a second builder (proven on made-up files)', () => {
  const fake = new Map([
    ['src/extension.ts', "import { createSshConnectOptions } from './x';\nconst o = createSshConnectOptions(context, log);"],
    ['src/features/hosts/x.ts', 'export function createSshConnectOptions(c, l) { return {}; }'],
    ['src/features/hosts/registerHosts.ts', 'registerHostCommands(store, () => createSshConnectOptions(deps.context, deps.log));'],
  ]);
  assert.deepEqual(callers(fake, 'createSshConnectOptions'), ['src/extension.ts', 'src/features/hosts/registerHosts.ts']);
});

// Module-level caches (`let shared…; shared ??= …`) are how a feature builds a second, hidden root.
test('features hold no module-level service singletons', () => {
  const offenders = sources(join(REPO, 'src/features')).filter((f) => /^let \w+\s*:[^=\n]*\|\s*undefined;\s*$/m.test(readFileSync(f, 'utf8')));
  assert.deepEqual(
    offenders.map((f) => relative(REPO, f)),
    [],
  );
});

test('SSH connect options, cloud providers, run services and the host store are built once, in the composition root', () => {
  const files = new Map(sources(join(REPO, 'src')).map((f) => [relative(REPO, f).split('\\').join('/'), readFileSync(f, 'utf8')]));
  for (const name of ROOT_ONLY) assert.deepEqual(callers(files, name), ['src/extension.ts'], name);
});

// One registration path (src/features/commands.ts): every command's failure is logged with its id.
test('commands are registered only through features/commands.ts', () => {
  const direct = sources(join(REPO, 'src'))
    .filter((f) => /vscode\.commands\.registerCommand\s*\(/.test(readFileSync(f, 'utf8')))
    .map((f) => relative(REPO, f).split('\\').join('/'));
  assert.deepEqual(direct, ['src/features/commands.ts']);
});
