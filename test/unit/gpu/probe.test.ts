// The SSH GPU probe (src/core/ssh/gpuProbe.ts) on real nvidia-smi output from
// test/fixtures/nvidia-smi/real (sources in SOURCES.md there) and on the hand-written samples of the
// formats no citable real sample covers (test/fixtures/nvidia-smi, README.md there). The probe's own
// shell command runs here for real, against a stand-in nvidia-smi that replays those samples, so the
// grep that finds the CUDA version is tested on real banners too (no GPU on this machine).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GPU_PROBE_COMMAND, PROBE_FIELDS, describeGpus, parseGpuProbe } from '../../../src/core/ssh/gpuProbe';
import { parseNvidiaSmiCsv } from '../../../src/core/telemetry/nvidiaSmi';

const HAND = join(__dirname, '../../fixtures/nvidia-smi');
const REAL = join(HAND, 'real');
const real = (f: string): string => readFileSync(join(REAL, f), 'utf8');
const hand = (f: string): string => readFileSync(join(HAND, f), 'utf8');
type Expected = { file: string; cuda: string | null }[];
const expectedReal = (JSON.parse(real('expected.json')) as { cases: Expected }).cases;
const expectedHand = (JSON.parse(hand('expected.json')) as { cases: Expected }).cases;

const H100_UUID = 'GPU-5b1e9c2a-7d34-4f08-a6c1-93e2d7b04f15';

/** What `--query-gpu=index,name,memory.total,driver_version,uuid --format=csv,noheader,nounits` prints on the
 *  machine of a hand-written `--format=csv` sample: its values for those fields, units dropped as nounits does. */
function probeCsvFrom(file: string): string {
  return parseNvidiaSmiCsv(hand(file))
    .rows.map((r) => PROBE_FIELDS.map((f) => (r.values.get(f) ?? '').replace(/ MiB$/, '')).join(', '))
    .join('\n');
}

const tmp: string[] = [];
after(() => {
  for (const d of tmp) rmSync(d, { recursive: true, force: true });
});

/** Runs GPU_PROBE_COMMAND under sh with a stand-in nvidia-smi that prints `csv` for --query-gpu and `banner` otherwise. */
function runProbe(csv: string, banner: string, rc = 0): string {
  const dir = mkdtempSync(join(tmpdir(), 'rft-probe-'));
  tmp.push(dir);
  writeFileSync(join(dir, 'csv'), csv);
  writeFileSync(join(dir, 'banner'), banner);
  writeFileSync(join(dir, 'nvidia-smi'), `#!/bin/sh\ncase "$1" in\n  --query-gpu=*) cat "${dir}/csv"; exit ${rc} ;;\n  *) cat "${dir}/banner" ;;\nesac\n`);
  chmodSync(join(dir, 'nvidia-smi'), 0o755);
  const r = spawnSync('sh', ['-c', GPU_PROBE_COMMAND], { env: { ...process.env, PATH: `${dir}:${process.env.PATH ?? ''}` }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('probe command on banners: CUDA from "CUDA Version" (470–595) and "CUDA UMD Version" (610), none for N/A', () => {
  const csv = probeCsvFrom('h100-mig_csv-units.csv');
  assert.equal(csv, `0, NVIDIA H100 80GB HBM3, 81559, 590.48.01, ${H100_UUID}`);
  const banners = [
    ...readdirSync(REAL)
      .filter((f) => f.startsWith('table_'))
      .map((f) => ({ f, text: real(f), want: expectedReal.find((c) => c.file === f)!.cuda })),
    ...readdirSync(HAND)
      .filter((f) => f.startsWith('banner_'))
      .map((f) => ({ f, text: hand(f), want: expectedHand.find((c) => c.file === f)!.cuda })),
  ];
  assert.ok(banners.length >= 13);
  assert.ok(banners.some((b) => b.want === null) && banners.some((b) => b.want === '13.3'));
  for (const { f, text, want } of banners) {
    const r = parseGpuProbe(runProbe(csv, text));
    assert.equal(r.kind, 'nvidia', f);
    if (r.kind !== 'nvidia') continue;
    assert.equal(r.cudaVersion, want, f);
  }
});

test('probe on a MIG H100 (590) and a Windows 610 driver: names, memory, driver and CUDA', () => {
  const h100 = parseGpuProbe(runProbe(probeCsvFrom('h100-mig_csv-units.csv'), hand('banner_h100-mig_590.txt')));
  assert.deepEqual(h100, {
    kind: 'nvidia',
    count: 1,
    driverVersion: '590.48.01',
    cudaVersion: '13.1',
    gpus: [{ index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalMiB: 81559, uuid: H100_UUID }],
  });
  assert.equal(describeGpus(h100), '1 × NVIDIA H100 80GB HBM3 (80 GiB), driver 590.48.01, CUDA 13.1');
  const win = parseGpuProbe(runProbe(probeCsvFrom('rtx2080super-win610_csv-wide.csv'), hand('banner_rtx2080super-win_610.txt')));
  assert.equal(describeGpus(win), '1 × NVIDIA GeForce RTX 2080 SUPER (8 GiB), driver 610.62, CUDA 13.3');
});

test('probe on --format=csv output (header row, units, many more fields) and CRLF still finds the boards', () => {
  const withHeader = `${hand('rtx2080super-win610_csv-wide.csv')}RFT-RC 0\nCUDA UMD Version: 13.3\n`;
  for (const out of [withHeader, withHeader.replace(/\n/g, '\r\n')]) {
    const r = parseGpuProbe(out);
    assert.equal(r.kind, 'nvidia');
    if (r.kind !== 'nvidia') continue;
    assert.deepEqual(r.gpus, [{ index: 0, name: 'NVIDIA GeForce RTX 2080 SUPER', memoryTotalMiB: 8192, uuid: 'GPU-8e4c0b7d-2a19-4c63-b5f0-6d7e81a9c324' }]);
    assert.equal(r.driverVersion, '610.62');
    assert.equal(r.cudaVersion, '13.3');
  }
  const two = parseGpuProbe(`${hand('h100x2_csv-units.csv')}RFT-RC 0\n`);
  assert.equal(two.kind === 'nvidia' && describeGpus(two), '2 × NVIDIA H100 80GB HBM3 (80 GiB)');
});

test('probe failures: each real message gives "no GPU" with nvidia-smi\'s words and what to do', () => {
  const reason = (file: string, rc: number): string => {
    const r = parseGpuProbe(`${real(file)}RFT-RC ${rc}\n`);
    assert.equal(r.kind, 'none', file);
    return r.kind === 'none' ? r.reason : '';
  };
  assert.match(
    reason('err_driver-not-loaded.txt', 9),
    /^No NVIDIA GPU available: nvidia-smi failed \(exit 9\): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.* — The NVIDIA driver is not loaded/,
  );
  assert.match(reason('err_driver-not-loaded_curly-quote.txt', 9), /driver is not loaded/);
  assert.match(reason('err_no-devices.txt', 6), /\(exit 6\): No devices were found — The NVIDIA driver is loaded but finds no GPU/);
  assert.match(reason('err_nvml-mismatch_570.txt', 18), /Driver\/library version mismatch — .*\(the library is 570\.124\).*reboot the host/);
  assert.match(reason('err_nvml-mismatch_470.txt', 18), /reboot the host/);
  assert.match(reason('err_nvml-unknown-error.txt', 255), /restart the container/);
  assert.match(reason('err_nvml-blocked-wsl.txt', 255), /GPU access blocked by the operating system — .*WSL/);
  assert.match(reason('err_libnvidia-ml-missing.txt', 12), /libnvidia-ml\.so/);
  assert.match(reason('err_gpu-lost.txt', 15), /GPU is lost.* — A GPU stopped responding/);
  assert.match(reason('err_device-handle-unknown.txt', 15), /stopped responding/);
  assert.match(reason('err_command-not-found.txt', 127), /not installed/);
  assert.match(reason('err_windows-not-recognized_pt.txt', 1), /^No NVIDIA GPU available: nvidia-smi failed \(exit 1\): 'nvidia-smi' n/);
  // a driver that prints its failure but exits 0 is still no GPU
  assert.match(reason('err_no-devices.txt', 0), /finds no GPU/);
  assert.deepEqual(parseGpuProbe('RFT-NO-NVIDIA-SMI\n'), { kind: 'none', reason: 'No NVIDIA GPU: nvidia-smi is not installed on this host.' });
  assert.match((parseGpuProbe(`${hand('list-gpus_h100-mig.txt')}RFT-RC 0\n`) as { reason: string }).reason, /^No NVIDIA GPU: nvidia-smi lists no devices\.$/);
  assert.match((parseGpuProbe('') as { reason: string }).reason, /gave no answer/);
});

test('probe: one GPU lost among healthy ones keeps the healthy boards and says what is wrong', () => {
  const row = probeCsvFrom('h100-mig_csv-units.csv');
  const out = `${row}\n${row.replace(/^0, /, '1, ')}\n${real('err_gpu-lost.txt')}RFT-RC 15\nCUDA Version: 13.1\n`;
  const r = parseGpuProbe(out);
  assert.equal(r.kind, 'nvidia');
  if (r.kind !== 'nvidia') return;
  assert.equal(r.count, 2);
  assert.match(r.warning ?? '', /stopped responding.*GPU 0000:02:00\.0: GPU is lost/);
  assert.match(describeGpus(r), /^2 × NVIDIA H100 80GB HBM3 \(80 GiB\), driver 590\.48\.01, CUDA 13\.1\. Warning: A GPU stopped responding/);
});

test('probe: a last CSV line left unterminated (nvidia-smi killed mid-line) does not swallow the exit marker', () => {
  const csv = probeCsvFrom('h100-mig_csv-units.csv');
  const r = parseGpuProbe(runProbe(csv, real('table_h100x8_550.54.15_nccl-1264.txt')));
  assert.equal(r.kind === 'nvidia' && r.gpus[0]!.uuid, H100_UUID);
  // the output of the probe command before it ended that line itself
  const old = parseGpuProbe(`${csv}RFT-RC 0\nCUDA Version: 12.4\n`);
  assert.equal(old.kind === 'nvidia' && old.gpus[0]!.uuid, H100_UUID);
});

test('probe: hostile output never throws and never invents a GPU', () => {
  let seed = 11;
  const junk = Array.from({ length: 100_000 }, () => String.fromCharCode((seed = (seed * 1103515245 + 12345) % 2147483648) % 256)).join('');
  for (const out of [
    junk,
    `${junk}\nRFT-RC 0\n`,
    `${'x'.repeat(4 * 1024 * 1024)}\nRFT-RC 0\n`,
    '\x1b[31mRFT-RC 0\x1b[0m\n',
    'RFT-RC abc\n',
    '0, , 1, 2, 3\nRFT-RC 0\n',
  ]) {
    const r = parseGpuProbe(out);
    assert.equal(r.kind, 'none');
    describeGpus(r);
  }
});
