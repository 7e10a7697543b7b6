// Issue 33.2: the held-out VRAM estimates were committed before the GPU measured those cases. This holds the
// committed file to the driver's case list (bench/gpu/issue33.py), so the GPU run finds an estimate for every case,
// and any committed measurement of those cases to the estimates it carried (made before it, never recomputed).
// The estimator may change after the file was made (a refit): its figures then stay the held-out ones.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(__dirname, '../../..');
const BENCH = join(ROOT, 'bench', 'gpu');

interface Est {
  estimated_at: string;
  dry_run: boolean;
  estimator: { sha256: string; files: string[] };
  cases: { case: string; estimate_allocator_gib: number; estimate_total_gib: number }[];
}
const committed = (): Est => JSON.parse(readFileSync(join(BENCH, 'holdout-estimates-33.json'), 'utf8')) as Est;

test('every held-out GPU case of issue33.py has a committed estimate, made for the GPU (not a dry run)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-33-'));
  execFileSync('python3', [join(BENCH, 'issue33.py'), '--print-holdout-cases', join(dir, 'cases.json')], { cwd: ROOT });
  const cases = (JSON.parse(readFileSync(join(dir, 'cases.json'), 'utf8')) as { cases: { case: string; model: string }[] }).cases;
  const est = committed();
  assert.equal(est.dry_run, false);
  assert.match(est.estimator.sha256, /^[0-9a-f]{64}$/);
  const have = new Map(est.cases.map((c) => [c.case, c]));
  assert.ok(cases.length >= 8);
  assert.deepEqual(new Set(cases.map((c) => c.model)), new Set(['phi-3-mini', 'gemma-2-9b', 'qwen2.5-14b', 'qwen1.5-moe-a2.7b']));
  for (const c of cases) {
    const e = have.get(c.case);
    assert.ok(e, `no committed estimate for ${c.case}`);
    assert.ok(e.estimate_allocator_gib > 0 && e.estimate_total_gib >= e.estimate_allocator_gib, c.case);
  }
});

test('a committed held-out measurement carries the committed estimates, recorded before its first case ran', () => {
  const est = committed();
  const files = readdirSync(BENCH).filter((f) => /^holdout-vram-.+\.json$/.test(f));
  for (const f of files) {
    const doc = JSON.parse(readFileSync(join(BENCH, f), 'utf8')) as {
      dry_run: boolean;
      estimates: { estimated_at: string; estimator: { sha256: string } };
      estimates_recorded_at: string;
      cases: { case: string; status: string; measured_at?: string; estimate_allocator_gib: number }[];
    };
    assert.equal(doc.dry_run, false, `${f} is a dry run: never commit one`);
    assert.equal(doc.estimates.estimator.sha256, est.estimator.sha256, `${f}: estimates from another estimator`);
    const recorded = Date.parse(doc.estimates_recorded_at);
    assert.ok(Date.parse(est.estimated_at) <= recorded);
    const by = new Map(est.cases.map((c) => [c.case, c.estimate_allocator_gib]));
    for (const c of doc.cases) {
      assert.equal(c.estimate_allocator_gib, by.get(c.case), `${f}: ${c.case}'s estimate is not the committed one`);
      if (c.status !== 'not-run')
        assert.ok(c.measured_at && Date.parse(c.measured_at) >= recorded, `${f}: ${c.case} measured before its estimate was recorded`);
    }
  }
});
