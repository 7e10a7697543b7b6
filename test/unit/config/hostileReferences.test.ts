// A run spec's referenced files (model.config_path, launcher.config_file, launcher.deepspeed, env_file) are the
// workspace's choice and are read on opening the spec, before the folder is trusted. Pointed at /dev/zero (by a
// `../` climb or a link), a FIFO, a file outside the workspace or a huge one, the check must answer with a
// diagnostic within a second. The checks run in a child process with a deadline: a read that never ends (the
// old behaviour: the extension host died of std::bad_alloc on /dev/zero and hung on a FIFO) fails the test
// instead of hanging or killing the test runner.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { readBoundedSync, readPrefix } from '../../../src/core/config/boundedRead';

const REPO = join(__dirname, '../../..');
const FIELDS = [['model', 'config_path'], ['launcher', 'config_file'], ['launcher', 'deepspeed'], ['env_file']] as const;

function specWith(field: readonly string[], value: string): string {
  const launcher = field[0] === 'launcher' ? `launcher:\n  type: accelerate\n  ${field[1]}: ${JSON.stringify(value)}\n` : 'launcher:\n  type: accelerate\n';
  const model = field[0] === 'model' ? `  config_path: ${JSON.stringify(value)}\n` : '';
  const env = field[0] === 'env_file' ? `env_file: ${JSON.stringify(value)}\n` : '';
  return `version: 1\nmodel:\n  id: org/model-7B\n${model}method: qlora\ndata:\n  train: org/data\n${launcher}${env}target:\n  provider: ssh\n  gpu: A100-80GB\n`;
}

interface CaseResult {
  readonly name: string;
  readonly codes: string[];
  readonly messages: string[];
  readonly ms: number;
}

/** Runs each (name, spec) through validateText with the editor's file access rooted at `ws`, in a child with a deadline. */
function checkInChild(ws: string, cases: ReadonlyArray<{ name: string; spec: string }>): { results: CaseResult[]; status: number | null; stderr: string } {
  const script = `
    const { validateText } = require(${JSON.stringify(join(REPO, 'src/core/config/validate.ts'))});
    const nf = require(${JSON.stringify(join(REPO, 'src/core/config/nodeFiles.ts'))});
    const files = nf.localFiles ? nf.localFiles([${JSON.stringify(ws)}]) : nf.nodeFiles;
    const cases = JSON.parse(process.env.RFT_CASES);
    for (const c of cases) {
      const t0 = Date.now();
      const r = validateText(c.spec, { fileName: ${JSON.stringify(join(ws, 'finetune.yaml'))}, files });
      process.stdout.write(JSON.stringify({ name: c.name, codes: r.diagnostics.map((d) => d.code), messages: r.diagnostics.map((d) => d.message), ms: Date.now() - t0 }) + '\\n');
    }`;
  const out = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], {
    cwd: REPO,
    env: { ...process.env, RFT_CASES: JSON.stringify(cases) },
    timeout: 30_000,
    maxBuffer: 4 * 1024 * 1024,
    encoding: 'utf8',
  });
  const results = out.stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as CaseResult);
  return { results, status: out.status, stderr: `${out.signal ?? ''} ${out.error?.message ?? ''} ${out.stderr.slice(-2000)}` };
}

function hostileWorkspace(): { ws: string; targets: Record<string, string> } {
  const top = mkdtempSync(join(tmpdir(), 'rft-hostile-'));
  const ws = join(top, 'repo');
  mkdirSync(join(ws, 'configs'), { recursive: true });
  writeFileSync(join(top, 'outside.json'), '{"hidden_size": 4096, "num_hidden_layers": 32}\n');
  symlinkSync('/dev/zero', join(ws, 'configs', 'zero.json'));
  execFileSync('mkfifo', [join(ws, 'configs', 'pipe.json')]);
  writeFileSync(join(ws, 'configs', 'huge.json'), '');
  truncateSync(join(ws, 'configs', 'huge.json'), 64 * 1024 * 1024); // sparse: no disk used
  symlinkSync(join(top, 'outside.json'), join(ws, 'configs', 'linked-out.json'));
  const climb = relative(ws, '/dev/zero');
  return {
    ws,
    targets: {
      'climb to /dev/zero': climb,
      'link to /dev/zero': 'configs/zero.json',
      FIFO: 'configs/pipe.json',
      '64 MB file': 'configs/huge.json',
      '../ outside the workspace': '../outside.json',
      'link outside the workspace': 'configs/linked-out.json',
      folder: 'configs',
    },
  };
}

test('every referenced path that leads to a device, a FIFO, a folder, outside the workspace or over the cap gives RFT814 within a second', () => {
  const { ws, targets } = hostileWorkspace();
  const cases = FIELDS.flatMap((f) => Object.entries(targets).map(([what, value]) => ({ name: `${f.join('.')} → ${what}`, spec: specWith(f, value) })));
  const { results, status, stderr } = checkInChild(ws, cases);
  assert.equal(results.length, cases.length, `the checks did not finish (exit ${status}): ${stderr}`);
  for (const r of results) {
    assert.ok(r.codes.includes('RFT814'), `${r.name}: ${JSON.stringify(r.codes)} ${r.messages.join(' | ')}`);
    assert.ok(r.ms < 1000, `${r.name}: ${r.ms} ms`);
  }
  const byName = new Map(results.map((r) => [r.name, r.messages.join(' ')]));
  assert.match(byName.get('model.config_path → FIFO')!, /FIFO/);
  assert.match(byName.get('launcher.deepspeed → link to /dev/zero')!, /outside the workspace|character device/);
  assert.match(byName.get('launcher.config_file → 64 MB file')!, /larger than 4\.0 MB/);
  assert.match(byName.get('model.config_path → link outside the workspace')!, /outside the workspace/);
});

test('a referenced config inside the workspace, also through a link that stays inside, is still read and checked', () => {
  const { ws } = hostileWorkspace();
  writeFileSync(join(ws, 'configs', 'ds.json'), '{"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4, "train_batch_size": 999}\n');
  symlinkSync('ds.json', join(ws, 'configs', 'ds-link.json'));
  const cases = ['configs/ds.json', 'configs/ds-link.json'].map((p) => ({ name: p, spec: specWith(['launcher', 'deepspeed'], p) }));
  const { results, stderr } = checkInChild(ws, cases);
  assert.equal(results.length, 2, stderr);
  for (const r of results) {
    assert.ok(!r.codes.includes('RFT814') && !r.codes.includes('RFT813'), `${r.name}: ${JSON.stringify(r.codes)}`);
    // The DeepSpeed batch arithmetic (999 ≠ 2 × 4 × GPUs) is only found when the file was read.
    assert.ok(
      r.messages.some((m) => /999/.test(m)),
      `${r.name}: ${r.messages.join(' | ')}`,
    );
  }
});

test('readBoundedSync: the descriptor is checked too, the cap holds whatever the size claims, and a missing file is missing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-bounded-'));
  writeFileSync(join(dir, 'a.json'), 'x'.repeat(100));
  assert.deepEqual(readBoundedSync(join(dir, 'a.json'), { cap: 100 }), { text: 'x'.repeat(100) });
  assert.match((readBoundedSync(join(dir, 'a.json'), { cap: 99 }) as { refused: string }).refused, /larger than/);
  assert.deepEqual(readBoundedSync(join(dir, 'nope.json'), { cap: 100 }), { missing: true });
  assert.match((readBoundedSync('/dev/zero', { cap: 100 }) as { refused: string }).refused, /character device/);
  assert.match((readBoundedSync(join(dir, 'a.json'), { cap: 100, roots: [join(dir, 'sub')] }) as { refused: string }).refused, /outside the workspace/);
});

test('readPrefix reads at most the prefix of a huge sparse file and never opens a FIFO for a blocking read', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-prefix-'));
  const big = join(dir, 'big.json');
  writeFileSync(big, '[{"instruction": "a"}');
  truncateSync(big, 3 * 1024 * 1024 * 1024);
  const rssBefore = process.memoryUsage().rss;
  const r = await readPrefix(big, 65536);
  assert.ok(
    'bytes' in r && r.bytes.length === 65536 && !r.complete && r.size === 3 * 1024 * 1024 * 1024,
    JSON.stringify('refused' in r ? r : { size: r.size }),
  );
  assert.ok(process.memoryUsage().rss - rssBefore < 64 * 1024 * 1024);
  execFileSync('mkfifo', [join(dir, 'p.yaml')]);
  const t0 = Date.now();
  const p = await readPrefix(join(dir, 'p.yaml'), 65536);
  assert.ok('refused' in p && /FIFO/.test(p.refused), JSON.stringify(p));
  assert.ok(Date.now() - t0 < 1000);
});
