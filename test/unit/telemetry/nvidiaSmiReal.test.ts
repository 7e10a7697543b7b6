// Every real nvidia-smi sample in test/fixtures/nvidia-smi/real (sources in SOURCES.md), and the
// hand-written samples of the formats no citable real sample covers (test/fixtures/nvidia-smi, listed
// in its README.md), through every parser. What each must give is in real/expected.json and
// ../expected.json, which python-runner/tests/test_gpu.py checks too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  NVIDIA_SMI_GPU_FIELDS,
  NVIDIA_SMI_MAX_LINE,
  cleanNvidiaSmiLine,
  diagnoseNvidiaSmi,
  nvidiaSmiCudaVersion,
  nvidiaSmiDriverVersion,
  nvidiaSmiNumber,
  parseComputeAppLine,
  parseGpuCsvLine,
  parseNvidiaSmiCsv,
  parseNvidiaSmiGpuLine,
} from '../../../src/core/telemetry/nvidiaSmi';
import { nvidiaSmiSaysNoGpu, parseComputeApps, parseGpuCsv, parseNvidiaSmiGpuCsv } from '../../support/nvidiaSmiText';
import type { NvidiaSmiProcess, NvidiaSmiSample } from '../../../src/core/telemetry/nvidiaSmi';
import { parseGpuCsvLine as panelGpuLine, parseGpuProcsCsvLine } from '../../../src/features/panels/gpuCsvLines';
import { describeGpus, parseGpuProbe } from '../../../src/core/ssh/gpuProbe';

const HAND = join(__dirname, '../../fixtures/nvidia-smi');
const REAL = join(HAND, 'real');
const real = (f: string): string => readFileSync(join(REAL, f), 'utf8');
const hand = (f: string): string => readFileSync(join(HAND, f), 'utf8');

interface Case {
  readonly file: string;
  readonly fields?: string[];
  readonly table?: { readonly rows: number; readonly first: Record<string, string> };
  readonly gpu: { readonly count: number; readonly first?: NvidiaSmiSample };
  readonly apps: { readonly count: number; readonly first?: NvidiaSmiProcess };
  readonly problem: string | null;
  readonly cuda: string | null;
  readonly driver: string | null;
}
const REAL_CASES = (JSON.parse(real('expected.json')) as { cases: Case[] }).cases;
const HAND_CASES = (JSON.parse(hand('expected.json')) as { cases: Case[] }).cases;
/** Every sample with an expectation: the real ones, then the hand-written ones. */
const CASES: { readonly kind: 'real' | 'hand-written'; readonly c: Case; readonly text: string }[] = [
  ...REAL_CASES.map((c) => ({ kind: 'real' as const, c, text: real(c.file) })),
  ...HAND_CASES.map((c) => ({ kind: 'hand-written' as const, c, text: hand(c.file) })),
];
// The first hand-written files, in the runner's own noheader,nounits form: nvidiaSmi.test.ts and the
// Python Parser tests read them line by line; everything else in the folder needs an expectation.
const OLDER_HAND_WRITTEN = ['a100_lms.csv', 'compute_apps.csv', 'garbage.txt', 'gpu_csv_written.csv', 'h100_x8_lms.csv', 'no_gpu.txt', 't4_na.csv'];

test('real samples: expected.json covers every sample file, and every file has a source in SOURCES.md', () => {
  const files = readdirSync(REAL)
    .filter((f) => f !== 'expected.json' && f !== 'SOURCES.md')
    .sort();
  assert.deepEqual(REAL_CASES.map((c) => c.file).sort(), files);
  const sources = real('SOURCES.md');
  for (const f of files) assert.ok(sources.includes(`\`${f}\``), `${f} is not listed in SOURCES.md`);
});

test('hand-written samples: ../expected.json covers every newer file there, and README.md describes each', () => {
  const files = readdirSync(HAND, { withFileTypes: true })
    .filter((e) => e.isFile() && e.name !== 'expected.json' && e.name !== 'README.md' && !OLDER_HAND_WRITTEN.includes(e.name))
    .map((e) => e.name)
    .sort();
  assert.deepEqual(HAND_CASES.map((c) => c.file).sort(), files);
  const readme = hand('README.md');
  for (const f of [...files, ...OLDER_HAND_WRITTEN]) assert.ok(readme.includes(`| \`${f}\` |`), `${f} is not listed in README.md`);
});

for (const { kind, c, text } of CASES) {
  test(`${kind} sample ${c.file}: GPU samples, processes, diagnosis and versions`, () => {
    const gpu = parseNvidiaSmiGpuCsv(text, c.fields ?? NVIDIA_SMI_GPU_FIELDS);
    assert.equal(gpu.samples.length, c.gpu.count);
    if (c.gpu.first) assert.deepEqual(gpu.samples[0], c.gpu.first);
    const apps = parseComputeApps(text);
    assert.equal(apps.samples.length, c.apps.count);
    if (c.apps.first) assert.deepEqual(apps.samples[0], c.apps.first);
    if (c.table) {
      const table = parseNvidiaSmiCsv(text, c.fields);
      assert.equal(table.rows.length, c.table.rows);
      assert.deepEqual(Object.fromEntries(table.rows[0]!.values), c.table.first);
    }
    assert.equal(diagnoseNvidiaSmi(text)?.kind ?? null, c.problem);
    assert.equal(nvidiaSmiSaysNoGpu(text), c.problem !== null);
    assert.equal(nvidiaSmiCudaVersion(text), c.cuda);
    assert.equal(nvidiaSmiDriverVersion(text), c.driver);
  });
}

test('all samples: every line of every file through every line parser and the probe, nothing throws', () => {
  for (const { c, text } of CASES) {
    for (const line of text.split('\n')) {
      parseNvidiaSmiGpuLine(line);
      parseGpuCsvLine(line);
      parseGpuCsvLine(`1763737200.5, ${line}`);
      parseComputeAppLine(line);
      parseComputeAppLine(`1763737200.5, ${line}`, true);
      panelGpuLine(`1763737200.5, ${line}`);
      parseGpuProcsCsvLine(`1763737200.5, ${line}`);
    }
    assert.equal(parseGpuCsv(text).samples.length, 0, `${c.file} is raw nvidia-smi output, not gpu.csv`);
    for (const rc of [0, 9, 255]) describeGpus(parseGpuProbe(`${text}\nRFT-RC ${rc}\n`));
  }
});

test('all samples: CRLF and lone-CR line endings give the same results as LF', () => {
  for (const { c, text } of CASES) {
    const lf = parseNvidiaSmiGpuCsv(text, c.fields ?? NVIDIA_SMI_GPU_FIELDS).samples;
    for (const eol of ['\r\n', '\r']) {
      const converted = text.replace(/\n/g, eol);
      assert.deepEqual(parseNvidiaSmiGpuCsv(converted, c.fields ?? NVIDIA_SMI_GPU_FIELDS).samples, lf, `${c.file} with ${JSON.stringify(eol)}`);
      assert.deepEqual(parseComputeApps(converted).samples, parseComputeApps(text).samples);
      assert.equal(diagnoseNvidiaSmi(converted)?.kind ?? null, c.problem);
      assert.equal(nvidiaSmiCudaVersion(converted), c.cuda);
    }
  }
});

/** Our own query's ten values, with the units nvidia-smi prints, from a hand-written `--format=csv` sample. */
function ourFieldsFrom(file: string): string[] {
  const row = parseNvidiaSmiCsv(hand(file)).rows[0]!;
  return NVIDIA_SMI_GPU_FIELDS.map((f) => row.values.get(f) ?? '');
}

test('--format=csv: the header decides the columns, whatever order and however many fields it lists', () => {
  const ours = parseNvidiaSmiCsv(hand('h100x2_csv-units.csv'));
  assert.deepEqual(ours.fields, [...NVIDIA_SMI_GPU_FIELDS], 'clocks.current.sm [MHz] is clocks.sm');
  assert.deepEqual(ours.headerLines, [1]);
  const wide = parseNvidiaSmiCsv(hand('rtx2080super-win610_csv-wide.csv'));
  assert.equal(wide.fields.length, 65);
  assert.equal(wide.fields.indexOf('index'), 17);
  const row = wide.rows[0]!.values;
  assert.equal(row.get('kmd_version'), '610.62');
  assert.equal(row.get('clocks_throttle_reasons.active'), '[Requested functionality has been deprecated]');
  assert.equal(row.get('clocks_event_reasons.active'), '0x0000000000000000');
  assert.equal(row.get('clocks.gr'), '1950 MHz', 'clocks.current.graphics is clocks.gr');
  assert.equal(row.get('clocks.max.sm'), '2100 MHz', 'clocks.max.sm is not clocks.sm');
  assert.equal(nvidiaSmiNumber(row.get('clocks_event_reasons.active')), null, 'hex is not a reading');
  // the same query in our own field order (noheader) reads the same as the header-led wide row
  assert.deepEqual(
    parseNvidiaSmiGpuLine(ourFieldsFrom('rtx2080super-win610_csv-wide.csv').join(', ')),
    parseNvidiaSmiGpuCsv(hand('rtx2080super-win610_csv-wide.csv')).samples[0],
  );
});

test('values with units on our own query (noheader without nounits) read as numbers', () => {
  const cells = ourFieldsFrom('h100x2_csv-units.csv');
  assert.deepEqual(cells, ['0', 'NVIDIA H100 80GB HBM3', '100 %', '23 %', '20471 MiB', '81559 MiB', '61', '642.18 W', '700.00 W', '1980 MHz']);
  assert.deepEqual(parseNvidiaSmiGpuLine(cells.join(', ')), {
    index: 0,
    name: 'NVIDIA H100 80GB HBM3',
    utilizationGpu: 100,
    utilizationMemory: 23,
    memoryUsedMiB: 20471,
    memoryTotalMiB: 81559,
    temperatureC: 61,
    powerDrawW: 642.18,
    powerLimitW: 700,
    clocksSmMHz: 1980,
  });
  // the runner writes what nvidia-smi printed after the time; the panel must read it either way
  const panel = panelGpuLine(`1763737200.512, ${cells.join(', ')}`);
  assert.equal(panel?.t, 1763737200512);
  assert.equal(panel?.powerW, 642.18);
  assert.equal(panel?.smClockMHz, 1980);
  assert.equal(parseNvidiaSmiGpuCsv(hand('h100x2_csv-units.csv')).samples[1]?.clocksSmMHz, 1965);
});

test('MIG: utilization reads as null on a MIG-enabled H100, memory and power stay', () => {
  const s = parseNvidiaSmiGpuLine(ourFieldsFrom('h100-mig_csv-units.csv').join(', '));
  assert.equal(s?.utilizationGpu, null);
  assert.equal(s?.utilizationMemory, null);
  assert.equal(s?.memoryUsedMiB, 9412);
  assert.equal(s?.powerDrawW, 402.56);
  assert.equal(s?.fault, undefined, '[N/A] is no fault');
});

test('banners, --version and -L: driver and CUDA versions from 590 and 610 forms, none from a GPU list', () => {
  assert.equal(nvidiaSmiDriverVersion(hand('version_610.txt')), '610.57.04', 'DRIVER version : Deprecated… is skipped for the KMD line');
  assert.equal(nvidiaSmiCudaVersion(hand('version_610.txt')), '13.3');
  assert.equal(nvidiaSmiCudaVersion(hand('version_590.txt')), '13.1', 'spaces before the colon');
  assert.equal(nvidiaSmiDriverVersion(hand('banner_rtx2080super-win_610.txt')), '610.62');
  assert.equal(nvidiaSmiCudaVersion(hand('banner_h100-mig_590.txt')), '13.1');
  const list = hand('list-gpus_h100-mig.txt');
  assert.equal(nvidiaSmiCudaVersion(list), null);
  assert.equal(parseNvidiaSmiCsv(list).rows.length, 0);
  assert.deepEqual(parseNvidiaSmiCsv(list).rejectedLines, [1, 2, 3, 4, 5]);
});

test('a broken board: [GPU requires reset] and [GPU is lost] read as null and mark the sample', () => {
  const cells = ourFieldsFrom('h100x2_csv-units.csv');
  cells[2] = '[GPU requires reset]';
  cells[6] = '[GPU requires reset]';
  const s = parseNvidiaSmiGpuLine(cells.join(', '));
  assert.equal(s?.fault, 'GPU requires reset');
  assert.equal(s?.utilizationGpu, null);
  assert.equal(s?.temperatureC, null);
  assert.equal(s?.memoryUsedMiB, 20471);
  cells[2] = '[GPU is lost]';
  assert.equal(parseNvidiaSmiGpuLine(cells.join(', '))?.fault, 'GPU is lost', 'the first broken field in column order names the fault');
  assert.equal(
    parseNvidiaSmiGpuCsv(hand('rtx2080super-win610_csv-wide.csv')).samples[0]?.fault,
    undefined,
    '[Requested functionality has been deprecated] is no fault',
  );
  for (const v of [
    '[N/A]',
    '[Not Supported]',
    '[Unknown Error]',
    '[GPU requires reset]',
    'N/A',
    'ERR!',
    '[Requested functionality has been deprecated]',
    '',
    '0x1F',
    '1e3',
    'Infinity',
    'NaN',
    ' ',
  ]) {
    assert.equal(nvidiaSmiNumber(v), null, v);
  }
  assert.equal(nvidiaSmiNumber('400.00 W'), 400);
  assert.equal(nvidiaSmiNumber('97 %'), 97);
});

test('a -l/-lms loop as seen in the wild: header once or repeated, blank lines, XID messages in between', () => {
  const header = hand('h100x2_csv-units.csv').split('\n')[0]!;
  const row = hand('h100x2_csv-units.csv').split('\n')[1]!;
  const loop = [header, row, '', row, 'Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.', header, row, '', ''].join('\n');
  const r = parseNvidiaSmiGpuCsv(loop);
  assert.equal(r.samples.length, 3);
  assert.ok(r.samples.every((s) => s.index === 0 && s.name === 'NVIDIA H100 80GB HBM3'));
  assert.deepEqual(r.rejectedLines, [1, 5, 6]);
  // our own noheader,nounits loop with the same interruptions
  const ours = ourFieldsFrom('h100x2_csv-units.csv')
    .map((v) => v.replace(/ (%|MiB|W|MHz)$/, ''))
    .join(', ');
  const r2 = parseNvidiaSmiGpuCsv([ours, '', ours, 'Xid (PCI:0000:1b:00): 79, pid=1234, GPU has fallen off the bus.', ours].join('\r\n'));
  assert.equal(r2.samples.length, 3);
  assert.equal(r2.samples[0]!.clocksSmMHz, 1980);
});

test('a header without index numbers boards in listing order; a compute-apps header is not GPU samples', () => {
  const mm = parseNvidiaSmiGpuCsv(real('rtx2080ti-windows_442.19_mindminer-627_csv-nounits.csv'));
  assert.equal(mm.samples[0]?.index, 0);
  assert.equal(mm.samples[0]?.clocksSmMHz, null, 'clocks.current.graphics is not clocks.sm');
  assert.deepEqual(parseNvidiaSmiGpuCsv(hand('apps_h100-mig_csv-units.csv')).samples, [], 'gpu_name in a compute-apps header');
  assert.deepEqual(parseComputeApps(hand('h100-mig_csv-units.csv')).samples, []);
  assert.deepEqual(parseComputeApps(hand('rtx2080super-win610_csv-wide.csv')).samples, []);
});

test('compute apps with a header: used_gpu_memory [MiB] with units, and an idle GPU prints the header only', () => {
  const apps = parseComputeApps(hand('apps_h100-mig_csv-units.csv'));
  assert.deepEqual(
    apps.samples.map((p) => [p.pid, p.usedMemoryMiB]),
    [
      [48213, 4586],
      [48377, 3210],
      [48502, 1616],
    ],
  );
  assert.deepEqual(apps.rejectedLines, [1]);
  const idle = parseComputeApps(hand('apps_idle_csv-header-only.csv'));
  assert.deepEqual(idle, { samples: [], rejectedLines: [1] });
  assert.deepEqual(parseNvidiaSmiCsv(hand('apps_idle_csv-header-only.csv'), ['pid']).fields, ['pid', 'process_name', 'uuid', 'used_memory']);
});

test('Windows processes: paths with spaces and parentheses, [N/A] memory; a comma in a path stays in the name', () => {
  const apps = parseComputeApps(hand('apps_windows_csv-paths.csv')).samples;
  assert.ok(apps.some((p) => p.processName === 'C:\\Program Files (x86)\\Microsoft\\Edge\\Application\\msedge.exe'));
  assert.ok(apps.some((p) => p.processName === 'C:\\Users\\Dana Ortiz\\AppData\\Local\\Programs\\Microsoft VS Code\\Code.exe'));
  assert.ok(apps.every((p) => p.usedMemoryMiB === null && p.gpuUuid.startsWith('GPU-')));
  const p = parseComputeAppLine('4242, C:\\Tools, Inc\\train.exe, 2296 MiB, GPU-00000000-0000-0000-0000-000000000000');
  assert.equal(p?.processName, 'C:\\Tools, Inc\\train.exe');
  assert.equal(p?.usedMemoryMiB, 2296);
});

test('failures: each real message maps to its own kind and a message that says what to do', () => {
  const msg = (f: string): string => diagnoseNvidiaSmi(real(f))!.message;
  assert.match(msg('err_driver-not-loaded.txt'), /driver is not loaded/);
  assert.match(msg('err_driver-not-loaded_curly-quote.txt'), /driver is not loaded/);
  assert.match(msg('err_no-devices.txt'), /finds no GPU/);
  assert.match(msg('err_nvml-mismatch_570.txt'), /different versions \(the library is 570\.124\).*reboot/);
  assert.match(msg('err_nvml-mismatch_470.txt'), /reboot/);
  assert.match(msg('err_nvml-unknown-error.txt'), /\(Unknown Error\).*restart the container/);
  assert.match(msg('err_nvml-blocked-wsl.txt'), /WSL/);
  assert.match(msg('err_libnvidia-ml-missing.txt'), /libnvidia-ml\.so/);
  assert.match(msg('err_gpu-lost.txt'), /stopped responding/);
  assert.match(msg('err_command-not-found.txt'), /not installed/);
  assert.equal(
    diagnoseNvidiaSmi(real('err_gpu-lost.txt'))!.detail,
    'Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost. Reboot the system to recover this GPU',
  );
  // the exit code speaks when the text does not
  assert.equal(diagnoseNvidiaSmi('', 9)?.kind, 'driver-not-loaded');
  assert.equal(diagnoseNvidiaSmi('', 15)?.kind, 'gpu-lost');
  assert.equal(diagnoseNvidiaSmi(real('err_windows-not-recognized_pt.txt'), 1)?.message, 'nvidia-smi failed (exit 1).');
  assert.equal(diagnoseNvidiaSmi(hand('h100x2_csv-units.csv'), 0), undefined);
  assert.equal(diagnoseNvidiaSmi('Failed to initialize NVML: Insufficient Permissions')?.message.includes('/dev/nvidia'), true);
});

test('hostile input: binary junk, NULs, ANSI colour, giant lines and comma floods never throw or hang', () => {
  const cells = ourFieldsFrom('h100x2_csv-units.csv');
  const good = cells.join(', ');
  let seed = 7;
  const junk = Array.from({ length: 200_000 }, () => String.fromCharCode((seed = (seed * 1103515245 + 12345) % 2147483648) % 256)).join('');
  const giant = '0, ' + 'A'.repeat(8 * 1024 * 1024);
  const commas = '0,' + ','.repeat(NVIDIA_SMI_MAX_LINE - 10);
  const start = Date.now();
  for (const hostile of [junk, giant, commas, `\u0000${good}\u0000`, '\x1b[1;32m' + good + '\x1b[0m', '\x1b]0;title\x07' + good, '\ufeff' + good]) {
    const r = parseNvidiaSmiGpuCsv(`${hostile}\n${good}\n`);
    assert.ok(r.samples.length >= 1 && r.samples.length <= 2);
    assert.equal(r.samples.at(-1)!.powerDrawW, 642.18);
    parseComputeApps(hostile);
    diagnoseNvidiaSmi(hostile, 1);
    nvidiaSmiCudaVersion(hostile);
    describeGpus(parseGpuProbe(`${hostile}\nRFT-RC 0\n${hostile}`));
    parseGpuCsv(hostile);
  }
  assert.ok(Date.now() - start < 5000, `took ${Date.now() - start} ms`);
  assert.equal(parseNvidiaSmiGpuLine('\x1b[32m' + good + '\x1b[0m')?.clocksSmMHz, 1980);
  assert.equal(cleanNvidiaSmiLine('a\u0000b\x1b[31mc\x1b[0m\r'), 'abc');
  assert.equal(parseNvidiaSmiGpuLine(giant), undefined);
});
