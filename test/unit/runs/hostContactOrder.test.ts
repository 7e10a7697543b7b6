// A multi-node spec's hosts (target.hosts, from an untrusted workspace file) are reached only after the
// person confirmed the start: with a recording stand-in for the GPU probe, a declined confirmation contacts
// no host. A host the person picked is still checked first (a wrong GPU is said before they approve). And
// Start Training's only path to the probe is through that order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { confirmAndCheckHosts } from '../../../src/core/runs/hosts/hostContactOrder';

function recorder(confirmAnswer: string | undefined, hostsOk = true): { log: string[]; run: (fromSpec: boolean) => Promise<string | undefined> } {
  const log: string[] = [];
  return {
    log,
    run: (hostsFromSpec) =>
      confirmAndCheckHosts({
        hostsFromSpec,
        checkHosts: async () => {
          log.push('contact');
          return hostsOk;
        },
        confirm: async () => {
          log.push('confirm');
          return confirmAnswer;
        },
      }),
  };
}

test('hostContactOrder: spec-listed hosts: a declined confirmation contacts no host', async () => {
  const r = recorder(undefined);
  assert.equal(await r.run(true), undefined);
  assert.deepEqual(r.log, ['confirm']);
});

test('hostContactOrder: spec-listed hosts: confirm first, then contact; a failed host check stops the start', async () => {
  const ok = recorder('go');
  assert.equal(await ok.run(true), 'go');
  assert.deepEqual(ok.log, ['confirm', 'contact']);
  const bad = recorder('go', false);
  assert.equal(await bad.run(true), undefined);
  assert.deepEqual(bad.log, ['confirm', 'contact']);
});

test('hostContactOrder: a host the person picked is checked before the confirmation, which a failed check skips', async () => {
  const ok = recorder('go');
  assert.equal(await ok.run(false), 'go');
  assert.deepEqual(ok.log, ['contact', 'confirm']);
  const bad = recorder('go', false);
  assert.equal(await bad.run(false), undefined);
  assert.deepEqual(bad.log, ['contact']);
});

test('startTraining reaches the GPU probe only through confirmAndCheckHosts (never before the confirmation)', () => {
  const src = readFileSync(join(__dirname, '../../../src/features/runs/startTraining.ts'), 'utf8');
  const lines = src.split('\n');
  const calls = lines.flatMap((l, i) => (/confirmHostGpu\(/.test(l) && !/^\s*(export\s+)?async function confirmHostGpu/.test(l) ? [i] : []));
  assert.equal(calls.length, 1, `confirmHostGpu called in ${calls.length} places:\n${calls.map((i) => lines[i]).join('\n')}`);
  // The call is the body of the checkHosts callback given to confirmAndCheckHosts (it may wrap onto later lines).
  const from = lines.slice(0, calls[0]! + 1).reduce((found, l, i) => (/^\s*checkHosts:/.test(l) ? i : found), -1);
  assert.ok(from >= 0 && calls[0]! - from <= 3, `the probe is called outside confirmAndCheckHosts: ${lines[calls[0]!]}`);
  assert.ok(
    lines.slice(from, calls[0]!).every((l) => !/^\s*(confirm|hostsFromSpec):/.test(l)),
    'the call belongs to checkHosts, not to the next property',
  );
  assert.match(src, /hostsFromSpec: machineHosts !== undefined/);
});
