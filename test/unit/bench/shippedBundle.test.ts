// The SSH benchmarks measure what the VSIX ships: ssh2 from the production vendor bundle without its native
// addon, never node_modules' copy. Three ways this could break, each caught here: a benchmark reaching, through
// its value imports, source that loads ssh2 itself; a benchmark process able to load node_modules' ssh2 at all;
// and a recorded SSH verdict whose ssh2 bundle is not the one a production build makes today.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { buildSsh2Bundle, sha256Of } from '../../../bench/lib/shipped';
import { readResults } from '../../../bench/lib/results';

const ROOT = resolve(__dirname, '../../..');
const VALUE_IMPORT =
  /(?:^|\n)\s*(?:import|export)\s+(?!type\b)(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|require\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Files reached from `file` through value imports (type-only ones erased at run time are not followed). */
function reachesSsh2(file: string, seen = new Set<string>()): string | undefined {
  if (seen.has(file)) return undefined;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  for (const m of text.matchAll(VALUE_IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3]!;
    if (spec === 'ssh2' || spec.startsWith('ssh2/')) return relative(ROOT, file);
    if (!spec.startsWith('.')) continue;
    // NodeNext spells a TypeScript file's import with .js.
    const base = resolve(dirname(file), spec).replace(/\.js$/, '');
    const hit = [`${base}.ts`, join(base, 'index.ts'), base].find((c) => existsSync(c) && c.endsWith('.ts'));
    if (!hit) continue;
    const found = reachesSsh2(hit, seen);
    if (found) return `${relative(ROOT, file)} → ${found}`;
  }
  return undefined;
}

test('no benchmark reaches ssh2 through source it imports: SSH code comes from the shipped bundle only', () => {
  const benches = [
    ...readdirSync(join(ROOT, 'bench'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => join(ROOT, 'bench', f)),
    ...readdirSync(join(ROOT, 'bench/lib'))
      .filter((f) => f.endsWith('.ts') && f !== 'shippedEntry.ts')
      .map((f) => join(ROOT, 'bench/lib', f)),
  ];
  assert.ok(benches.length >= 10, 'the benchmarks were found');
  for (const b of benches) assert.equal(reachesSsh2(b), undefined, `${relative(ROOT, b)} loads ssh2 outside the shipped bundle`);
  // The guard sees a real path: the entry the bundle is built from does reach ssh2.
  assert.match(reachesSsh2(join(ROOT, 'bench/lib/shippedEntry.ts')) ?? '', /ssh2Module\.ts/);
});

test("a benchmark process cannot load node_modules' ssh2 (the preload bench/run.ts gives every benchmark)", () => {
  const preload = join(ROOT, 'bench/lib/noNodeModulesSsh2.cjs');
  assert.match(readFileSync(join(ROOT, 'bench/run.ts'), 'utf8'), /noNodeModulesSsh2\.cjs/);
  const r = spawnSync(process.execPath, ['--require', preload, '-e', "require('ssh2')"], { cwd: ROOT, encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /benchmarks load ssh2 only from the shipped vendor bundle/);
  const plain = spawnSync(process.execPath, ['-e', "require('ssh2')"], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(plain.status, 0, 'without the preload it loads (the guard is what refuses it)');
});

test("every SSH verdict ran on the VSIX's ssh2 bundle as a production build makes it today, without the native addon", async () => {
  const out = mkdtempSync(join(tmpdir(), 'rft-vsix-vendor-'));
  try {
    const today = sha256Of(await buildSsh2Bundle(out));
    const ssh = readResults(join(ROOT, 'bench/results/latest.jsonl')).filter((v) => v.cipher !== undefined);
    assert.ok(ssh.length >= 8, `SSH verdicts recorded (${ssh.length})`);
    for (const v of ssh) {
      assert.equal(v.ssh2_native_crypto, false, `${v.bench}: measured with ssh2's native addon`);
      assert.equal(v.ssh2_bundle_sha256, today, `${v.bench}: measured another ssh2 bundle than the VSIX ships; re-run npm run bench -- ${v.bench}`);
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
