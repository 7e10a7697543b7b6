import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { main } from '../../../src/cli/main';
import type { CliIo } from '../../../src/cli/command';

test('cli validate flags a .env line that points the stored tokens at a workspace-chosen server (RFT609, exit 0)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-cli-endpoint-'));
  writeFileSync(join(dir, '.env'), 'WANDB_PROJECT=demo\nHF_ENDPOINT=http://127.0.0.1:9\n');
  const out: string[] = [];
  const io: CliIo = { stdout: (t) => out.push(t), stderr: () => undefined, cwd: dir };
  assert.equal(await main(['validate', '.env', '--format', 'json'], io), 0, 'a warning does not fail the check');
  const ds = JSON.parse(out.join('')) as Array<Record<string, unknown>>;
  assert.deepEqual(
    ds.map((d) => [d.code, d.severity, d.line, d.column, d.endColumn]),
    [['RFT609', 'warning', 2, 13, 31]],
  );
  assert.match(String(ds[0]!.message), /HF_ENDPOINT .* at 127\.0\.0\.1:9/);
});
