import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { FAILURE_SIGNATURES, compileSignatures, matchSignature, signatureById } from '../../../src/core/telemetry/signatures';

const dir = join(__dirname, '../../fixtures/signatures');
const lines = (f: string): string[] =>
  readFileSync(join(dir, f), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');

test('signatures: the shared JSON compiles in JavaScript, every entry, with unique ids', () => {
  const raw = JSON.parse(readFileSync(join(__dirname, '../../../python-runner/remote_finetune/signatures.json'), 'utf8')) as { signatures: unknown[] };
  assert.equal(FAILURE_SIGNATURES.length, raw.signatures.length);
  assert.equal(new Set(FAILURE_SIGNATURES.map((s) => s.id)).size, FAILURE_SIGNATURES.length);
  for (const id of ['cuda-oom', 'meta-tensor', 'weight-not-module', 'gated-repo', 'bf16-unsupported', 'nccl-timeout', 'fa2-dtype', 'disk-full', 'oom-killer']) {
    assert.ok(signatureById(id), id);
  }
});

test('signatures: every sample line of <id>.txt is recognised as <id> (same files as the Python tests)', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.txt') && f !== 'none.txt');
  assert.equal(files.length, FAILURE_SIGNATURES.length, 'one sample file per signature');
  let n = 0;
  for (const f of files) {
    const id = f.replace(/\.txt$/, '');
    for (const line of lines(f)) {
      const m = matchSignature(line);
      assert.equal(m?.signature.id, id, `${f}: ${line}`);
      assert.ok(m.end > m.start);
      n++;
    }
  }
  assert.ok(n >= 30, `only ${n} sample lines`);
});

test('signatures: ordinary training output matches nothing', () => {
  for (const line of lines('none.txt')) assert.equal(matchSignature(line), undefined, line);
});

test('signatures: the match offsets point at the matched text, and a bad pattern is skipped, not thrown', () => {
  const line = 'RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB';
  const m = matchSignature(line);
  assert.equal(m && line.slice(m.start, m.end), 'CUDA out of memory');
  const compiled = compileSignatures({
    signatures: [
      { id: 'bad', regex: '(', title: 't', hint: 'h' },
      { id: 'ok', regex: 'x', title: 't', hint: 'h' },
    ],
  });
  assert.deepEqual(
    compiled.map((s) => s.id),
    ['ok'],
  );
});
