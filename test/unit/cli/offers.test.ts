// `remote-finetune offers`: core's provider selection from the CLI's flags and environment, against the
// Lambda Cloud API emulator (a test double speaking Lambda's documented JSON; no cloud is reachable here).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main';
import type { CliIo } from '../../../src/cli/command';
import { LambdaEmulator } from '../../emulators/lambda';

/** No AWS region, no Google project or credentials: HOME is an empty temp folder. */
function bareEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const home = mkdtempSync(join(tmpdir(), 'rft-cli-offers-'));
  return { HOME: home, CLOUDSDK_CONFIG: join(home, 'gcloud'), PATH: process.env.PATH, ...extra };
}

function capture(env: NodeJS.ProcessEnv): { io: CliIo; out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { stdout: (t) => out.push(t), stderr: (t) => err.push(t), cwd: process.cwd(), env }, out, err };
}

test('cli offers: bad usage is exit 2 (no --gpu, a bad --hours, an unknown provider)', async () => {
  for (const args of [[], ['--gpu', 'A100', '--hours', '0'], ['--gpu', 'A100', '--provider', 'azure'], ['--gpu', 'A100', 'extra']]) {
    const c = capture(bareEnv());
    assert.equal(await main(['offers', ...args], c.io), 2, args.join(' '));
    assert.match(c.err.join(''), /usage: remote-finetune offers/);
  }
});

test('cli offers: nothing configured lists no offers (exit 1) and says what each cloud needs', async () => {
  const c = capture(bareEnv());
  assert.equal(await main(['offers', '--gpu', 'A100'], c.io), 1);
  const err = c.err.join('');
  assert.match(err, /Lambda Cloud: no API key \(set LAMBDA_API_KEY\)/);
  assert.match(err, /AWS EC2: no region \(pass --region or set AWS_REGION\)/);
  assert.match(err, /GCP: needs --project/);
  assert.equal(c.out.join(''), 'no A100 offers\n');
});

test('cli offers: a named cloud without its setup says only what that cloud needs', async () => {
  const c = capture(bareEnv());
  assert.equal(await main(['offers', '--gpu', 'T4', '--provider', 'ec2'], c.io), 1);
  assert.equal(c.err.join(''), 'remote-finetune: AWS EC2: no region (pass --region or set AWS_REGION)\n');
});

test('cli offers: Lambda offers from its API, cheapest launchable first, with the cost of the planned hours', async () => {
  const emu = await new LambdaEmulator('secret-key-for-cli').start();
  try {
    const env = bareEnv({ LAMBDA_API_KEY: 'secret-key-for-cli' });
    const c = capture(env);
    assert.equal(
      await main(['offers', '--gpu', 'A100', '--hours', '3', '--provider', 'lambda', '--lambda-api-url', `${emu.url}/api/v1`, '--format', 'json'], c.io),
      0,
    );
    assert.equal(emu.unauthorized, 0, 'the key from the environment was sent');
    assert.equal(c.err.join(''), '', "a named provider hides the other clouds' setup notes");
    const rows = JSON.parse(c.out.join('')) as Array<{
      provider: string;
      instanceType: string;
      gpuCount: number;
      region: string;
      capacity: string;
      pricePerHour: number;
      runUsd: number;
    }>;
    assert.ok(rows.length >= 2);
    assert.ok(
      rows.every((r) => r.provider === 'lambda' && r.gpuCount === 1),
      'one GPU unless --count says otherwise',
    );
    assert.deepEqual(rows.map((r) => r.instanceType).sort(), ['gpu_1x_a100', 'gpu_1x_a100_sxm4']);
    assert.ok(rows[0]!.capacity === 'available');
    assert.ok(rows[0]!.runUsd >= rows[0]!.pricePerHour * 3, 'the run costs at least the training hours');

    const text = capture(env);
    assert.equal(await main(['offers', '--gpu=A100', '--count=8', '--lambda-api-url', `${emu.url}/api/v1`], text.io), 0);
    const lines = text.out.join('').trim().split('\n');
    assert.ok(lines.length >= 1 && lines.every((l) => l.startsWith('8× A100')), lines.join('\n'));
    assert.ok(
      lines.some((l) => /lambda gpu_8x_a100_80gb_sxm4 .*capacity now .*about \$/.test(l)),
      lines.join('\n'),
    );
    assert.match(text.err.join(''), /AWS EC2: no region/, 'without --provider every unconfigured cloud is named');

    const wrong = capture({ ...env, LAMBDA_API_KEY: 'not-the-key-000000' });
    assert.equal(await main(['offers', '--gpu', 'A100', '--provider', 'lambda', '--lambda-api-url', `${emu.url}/api/v1`], wrong.io), 1);
    assert.match(wrong.err.join(''), /lambda: /, "the cloud's refusal is shown");
  } finally {
    await emu.stop();
  }
});
