// A file's name says what it holds, and no two files under src/ share one: `knownHosts.ts` was both the OpenSSH
// known_hosts reader and the merged host list, `secrets.ts` both the token patterns and the 0600 env file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

const REPO = join(__dirname, '../../..');

/** Folders whose files are named after something outside the code, so a name may repeat one elsewhere. */
const NAMED_FROM_OUTSIDE: Readonly<Record<string, string>> = {
  // One file per `remote-finetune <subcommand>`: cli/commands/validate.ts is the `validate` subcommand over core's.
  'src/cli/commands/': 'the CLI subcommands',
  // One folder per cloud with the same roles (as SkyPilot's sky/provision/<cloud>/): ec2/instances.ts, gcp/instances.ts, …
  'src/core/providers/ec2/': 'the roles of a cloud provider',
  'src/core/providers/gcp/': 'the roles of a cloud provider',
  'src/core/providers/lambda/': 'the roles of a cloud provider',
};

function filesUnder(rel: string): string[] {
  return readdirSync(join(REPO, rel)).flatMap((n) => {
    const p = `${rel}/${n}`;
    return statSync(join(REPO, p)).isDirectory() ? filesUnder(p) : /\.tsx?$/.test(n) ? [p] : [];
  });
}

/** Basenames two or more files share, each with its files (the allowed folders left out). */
function sharedNames(files: readonly string[]): Record<string, string[]> {
  const by = new Map<string, string[]>();
  for (const f of files) {
    if (Object.keys(NAMED_FROM_OUTSIDE).some((dir) => f.startsWith(dir))) continue;
    const b = basename(f);
    by.set(b, [...(by.get(b) ?? []), f]);
  }
  return Object.fromEntries([...by].filter(([, fs]) => fs.length > 1));
}

test('file names: the check sees a repeated name and the allowed folders', () => {
  assert.deepEqual(sharedNames(['src/core/a/x.ts', 'src/core/b/x.ts', 'src/core/b/y.ts']), { 'x.ts': ['src/core/a/x.ts', 'src/core/b/x.ts'] });
  assert.deepEqual(sharedNames(['src/cli/commands/validate.ts', 'src/core/config/validate.ts']), {});
  assert.ok(filesUnder('src').length > 200);
});

test("file names: no two files under src/ share a name (the CLI subcommands and the clouds' role files aside)", () => {
  assert.deepEqual(sharedNames(filesUnder('src')), {});
});

/** The roles a cloud's folder may hold (as SkyPilot's sky/provision/<cloud>/ holds instance.py, config.py, …). */
const CLOUD_ROLES = new Set([
  'instances', // the Provider: launch, describe, terminate, list
  'catalog', // the GPU instance types and their list prices
  'api', // the cloud's client: errors, retries, eventual consistency
  'network', // VPC, subnet, firewall, keys
  'offerings', // offers and prices now, zones to fail over to
  'pricing',
  'dlami',
  'image', // the image an instance boots
  'cluster',
  'volume',
  'spotRecovery',
  'auth',
  'token',
  'externalAccount',
  'metadataCredentials',
  'osLogin',
]);

test('file names: each cloud under src/core/providers/ is a folder of role files, with its instances and catalog', () => {
  const clouds = readdirSync(join(REPO, 'src/core/providers'), { withFileTypes: true }).filter((e) => e.isDirectory());
  assert.deepEqual(clouds.map((c) => c.name).sort(), ['ec2', 'gcp', 'lambda']);
  for (const c of clouds) {
    const roles = readdirSync(join(REPO, 'src/core/providers', c.name)).map((f) => f.replace(/\.ts$/, ''));
    assert.deepEqual(
      roles.filter((r) => !CLOUD_ROLES.has(r)),
      [],
      `files in src/core/providers/${c.name}/ that are no role`,
    );
    assert.ok(roles.includes('instances') && roles.includes('catalog'), `${c.name} has instances.ts and catalog.ts`);
  }
  assert.deepEqual(
    filesUnder('src/core/providers').filter((f) => /\/(ec2|gcp|lambda)[A-Z][^/]*\.ts$/.test(f) || /\/(ec2|gcp|lambda)\.ts$/.test(f)),
    [],
    'cloud files left at the root of src/core/providers/',
  );
});
