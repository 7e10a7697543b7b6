// Hand-written configs in the shapes real projects publish (test/fixtures/config/wild/<kind>/, what
// each exercises in README.md there): the validator must recognise each as the kind its folder
// names, never crash, and raise no error or warning on them except the real problem listed below.
// Every false positive that public configs once caught (null values, DeepSpeed field aliases and
// "auto", TRL/alignment-handbook/open-r1 keys, LLaMA-Factory v1, W&B Launch sweeps, .env templates,
// …) is reproduced here, so it stays fixed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { validateBytes } from '../../../src/core/config/validate';
import { nodeFiles } from '../../../src/core/config/nodeFiles';
import { LineIndex } from '../../../src/core/config/text';
import { CONFIG_KINDS } from '../../../src/core/config/types';
import type { ConfigKind } from '../../../src/core/config/types';

const root = resolve(__dirname, '../../fixtures/config/wild');

interface Expected {
  readonly code: string;
  /** 1-based line of the diagnostic's start (the "Hand-written" comment is line 1 in YAML and .env files). */
  readonly line: number;
  readonly reason: string;
}

// Diagnostics that are right: the one deliberate mistake in the set (README.md says more).
const EXPECTED: Readonly<Record<string, readonly Expected[]>> = {
  'accelerate/no-distribution-eight-processes.yaml': [
    { code: 'RFT805', line: 11, reason: 'distributed_type "NO" with num_processes 8: accelerate launches one process from this file, the 8 is never used' },
  ],
};

interface Finding {
  code: string;
  line: number;
  message: string;
}

interface Checked {
  readonly rel: string;
  readonly folder: string;
  readonly kind: ConfigKind | undefined;
  /** Errors and warnings (info is advice, not a problem). */
  readonly problems: Finding[];
  readonly codes: string[];
  readonly ms: number;
}

function files(): Array<{ rel: string; folder: string; abs: string }> {
  const out: Array<{ rel: string; folder: string; abs: string }> = [];
  for (const folder of readdirSync(root).sort()) {
    const dir = join(root, folder);
    if (!statSync(dir).isDirectory()) continue;
    for (const name of readdirSync(dir).sort()) out.push({ rel: `${folder}/${name}`, folder, abs: join(dir, name) });
  }
  return out;
}

function check(f: { rel: string; folder: string; abs: string }): Checked {
  const bytes = readFileSync(f.abs);
  const t0 = performance.now();
  // The CLI's settings: real file system (cross-file checks, git) and the full parser for any size.
  const r = validateBytes(bytes, { fileName: f.abs, files: nodeFiles, libraryParseLimit: Infinity });
  const ms = performance.now() - t0;
  const text = r.text ?? '';
  const li = new LineIndex(text);
  for (const d of r.diagnostics) {
    assert.ok(d.start >= 0 && d.start <= d.end && d.end <= text.length, `${f.rel}: ${d.code} range ${d.start}..${d.end} outside the text (${text.length})`);
  }
  return {
    rel: f.rel,
    folder: f.folder,
    kind: r.kind,
    problems: r.diagnostics.filter((d) => d.severity !== 'info').map((d) => ({ code: d.code, line: li.positionAt(d.start).line + 1, message: d.message })),
    codes: r.diagnostics.map((d) => d.code),
    ms,
  };
}

const all = files();
// One run for every test below; a throw here fails the file, which is the "no crash" check too.
const results = all.map(check);

test('wild configs: every kind but the run spec, 4 to 8 files each, each saying what it exercises', () => {
  assert.ok(all.length >= 40, `only ${all.length} wild configs`);
  const folders = new Set(all.map((f) => f.folder));
  for (const k of CONFIG_KINDS.filter((k) => k !== 'runspec')) {
    const n = all.filter((f) => f.folder === k).length;
    assert.ok(n >= 4 && n <= 8, `${n} wild ${k} configs (want 4 to 8)`);
  }
  for (const f of folders) assert.ok((CONFIG_KINDS as readonly string[]).includes(f), `folder ${f} is not a config kind`);
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  for (const f of all) {
    const name = f.rel.slice(f.folder.length + 1);
    assert.ok(readme.includes(`| ${f.folder} | \`${name}\` |`), `${f.rel} is not listed in README.md`);
    if (!name.endsWith('.json'))
      assert.match(
        readFileSync(f.abs, 'utf8'),
        /^# Hand-written in the style of [^\n;]+; exercises: \S[^\n]*\n/,
        `${f.rel}: first line does not say it is hand-written and what it exercises`,
      );
  }
  const listed = [...readme.matchAll(/^\| (\w+) \| `([^`]+)` \|/gm)].map((m) => `${m[1]}/${m[2]}`);
  assert.deepEqual(
    listed.filter((rel) => !all.some((f) => f.rel === rel)),
    [],
    'README.md lists files that are not there',
  );
});

test('wild configs: each is detected as the kind its folder names', () => {
  const wrong = results.filter((r) => r.kind !== r.folder).map((r) => `${r.rel}: detected as ${String(r.kind)}`);
  assert.deepEqual(wrong, []);
});

test('wild configs: no internal errors, and no errors or warnings but the real problem in the expectations table', () => {
  const unexpected: string[] = [];
  for (const r of results) {
    assert.ok(!r.codes.includes('RFT009'), `${r.rel}: internal error in a check`);
    const allowed = EXPECTED[r.rel] ?? [];
    for (const e of r.problems) {
      if (!allowed.some((a) => a.code === e.code && a.line === e.line)) unexpected.push(`${r.rel}:${e.line} ${e.code} ${e.message}`);
    }
  }
  assert.deepEqual(unexpected, []);
});

test('wild configs: every expected diagnostic is still reported (the table cannot go stale)', () => {
  for (const [rel, want] of Object.entries(EXPECTED)) {
    const r = results.find((x) => x.rel === rel);
    assert.ok(r, `${rel} is in the expectations table but not in the fixtures`);
    for (const w of want) {
      assert.ok(w.reason.length > 0, `${rel}: ${w.code} needs a reason`);
      assert.ok(
        r.problems.some((e) => e.code === w.code && e.line === w.line),
        `${rel}: expected ${w.code} on line ${w.line} (${w.reason}); got ${JSON.stringify(r.problems)}`,
      );
    }
  }
});

test('wild configs: the whole set validates in well under 10 s, no file over 2 s', () => {
  const total = results.reduce((s, r) => s + r.ms, 0);
  const slow = results.filter((r) => r.ms > 2000).map((r) => `${r.rel}: ${r.ms.toFixed(0)} ms`);
  assert.deepEqual(slow, []);
  assert.ok(total < 10_000, `all ${results.length} files took ${total.toFixed(0)} ms`);
});
