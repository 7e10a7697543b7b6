// Parser for nvidia-smi's CSV query output, used by the GPU panel (tailing the run's gpu.csv)
// and by the SSH GPU probe (one `nvidia-smi --query-gpu=… --format=csv,noheader,nounits` call).
// python-runner/remote_finetune/gpu.py writes gpu.csv with the same field order and mirrors this parser;
// the fixtures in test/fixtures/nvidia-smi (output quoted from public issue reports under real/, with
// SOURCES.md, and hand-written samples of the documented formats) are read by the tests of both.
//
// What real nvidia-smi output does that the documented format does not promise (see real/SOURCES.md):
// a header row ("memory.used [MiB]") when `noheader` is missing, unit suffixes ("400.00 W", "97 %") when
// `nounits` is missing, bracketed states ("[N/A]", "[Not Supported]", "[Unknown Error]",
// "[GPU requires reset]", "[Requested functionality has been deprecated]"), CRLF from Windows,
// blank lines and driver/XID messages between the rows of a `-l`/`-lms` loop, and error text instead
// of CSV when the driver is missing, mismatched or a GPU has fallen off the bus.

export const NVIDIA_SMI_GPU_FIELDS = [
  'index',
  'name',
  'utilization.gpu',
  'utilization.memory',
  'memory.used',
  'memory.total',
  'temperature.gpu',
  'power.draw',
  'power.limit',
  'clocks.sm',
] as const;

export const NVIDIA_SMI_APP_FIELDS = ['pid', 'process_name', 'used_memory', 'gpu_uuid'] as const;

export interface NvidiaSmiSample {
  readonly index: number;
  readonly name: string;
  /** Percent; null where nvidia-smi printed [N/A] or [Not Supported]. */
  readonly utilizationGpu: number | null;
  readonly utilizationMemory: number | null;
  readonly memoryUsedMiB: number | null;
  readonly memoryTotalMiB: number | null;
  readonly temperatureC: number | null;
  readonly powerDrawW: number | null;
  readonly powerLimitW: number | null;
  readonly clocksSmMHz: number | null;
  /** Seconds since the epoch; present on lines of the runner's gpu.csv only. */
  readonly ts?: number;
  /** Present only when a field said the board is broken ("GPU requires reset", "GPU is lost"). */
  readonly fault?: string;
}

export interface NvidiaSmiProcess {
  readonly pid: number;
  readonly processName: string;
  readonly usedMemoryMiB: number | null;
  readonly gpuUuid: string;
  readonly ts?: number;
}

export interface ParsedGpuCsv<T> {
  readonly samples: T[];
  /** 1-based line numbers of non-empty lines that were not samples (headers, warnings, truncation). */
  readonly rejectedLines: number[];
}

// The widest real line seen is ~9.7 KB (240 fields, driver 610); anything far longer is not nvidia-smi
// CSV, and refusing it before splitting keeps a runaway writer from costing memory and time.
export const NVIDIA_SMI_MAX_LINE = 64 * 1024;

// A number, optionally followed by the unit nvidia-smi adds without `nounits` ("24580 MiB", "400.00 W",
// "97 %", "1410 MHz"). Strict on purpose: Number() would also take "0x1F", "1e3", "Infinity" and "".
const NUMBER = /^([+-]?\d+(?:\.\d+)?)(?:\s*(?:%|[KMGT]i?B|W|MHz|GHz|C|°C|RPM|V|mV|s|ms|us))?$/i;

/**
 * One value as a number: unit suffixes are accepted, and `[N/A]`, `[Not Supported]`, `[Unknown Error]`,
 * `[GPU requires reset]`, `N/A`, `ERR!` and anything else non-numeric read as null.
 */
export function nvidiaSmiNumber(raw: string | undefined): number | null {
  const s = (raw ?? '').trim();
  if (s.length === 0 || s.length > 64) return null;
  const m = NUMBER.exec(s);
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isFinite(n) ? n : null;
}

const FAULT = /^\[(GPU requires reset|GPU is lost)\]$/i;

/** "GPU requires reset" / "GPU is lost" when a value says the board itself is broken, else undefined. */
export function nvidiaSmiFault(raw: string | undefined): string | undefined {
  const m = FAULT.exec((raw ?? '').trim());
  return m ? m[1] : undefined;
}

/**
 * Removes what is not text: ANSI escape sequences (a colouring wrapper or a terminal), other control
 * characters (binary junk, a stray CR), and a UTF-8 byte-order mark. A hand loop rather than a regex so
 * that control characters need no regex literal and the cost stays linear.
 */
export function cleanNvidiaSmiLine(line: string): string {
  let clean = true;
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || c === 0xfeff) {
      clean = false;
      break;
    }
  }
  if (clean) return line.trim();
  let out = '';
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c === 0x1b) {
      const next = line.charCodeAt(i + 1);
      if (next === 0x5b) {
        // CSI: parameters and intermediates, then one final byte in @..~
        i += 2;
        while (i < line.length && !(line.charCodeAt(i) >= 0x40 && line.charCodeAt(i) <= 0x7e)) i++;
      } else if (next === 0x5d) {
        // OSC: up to BEL or ESC \
        i += 2;
        while (i < line.length && line.charCodeAt(i) !== 0x07 && !(line.charCodeAt(i) === 0x1b && line.charCodeAt(i + 1) === 0x5c)) i++;
        if (line.charCodeAt(i) === 0x1b) i++;
      } else {
        i++;
      }
      continue;
    }
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || c === 0xfeff) continue;
    out += line[i];
  }
  return out.trim();
}

// nvidia-smi accepts two spellings for several fields and prints the long one in its header
// ("clocks.sm" is queried, "clocks.current.sm [MHz]" comes back), so both map to one name here.
// A Map, not an object literal: a header cell such as "constructor" must not find Object.prototype.
const FIELD_ALIASES: ReadonlyMap<string, string> = new Map([
  ['gpu_name', 'name'],
  ['gpu_uuid', 'uuid'],
  ['gpu_serial', 'serial'],
  ['gpu_bus_id', 'pci.bus_id'],
  ['clocks.current.sm', 'clocks.sm'],
  ['clocks.current.graphics', 'clocks.gr'],
  ['clocks.current.memory', 'clocks.mem'],
  ['clocks.current.video', 'clocks.video'],
  ['clocks.max.graphics', 'clocks.max.gr'],
  ['clocks.max.memory', 'clocks.max.mem'],
  ['used_gpu_memory', 'used_memory'],
]);

/** A header cell or a queried field ("memory.used [MiB]", "GPU_UUID") as one canonical lower-case name. */
export function canonicalNvidiaSmiField(cell: string): string {
  const bare = cell
    .trim()
    .replace(/\s*\[[^\]]*\]$/, '')
    .toLowerCase();
  return FIELD_ALIASES.get(bare) ?? bare;
}

// Names that make a line a header rather than data; any one is enough, all cells must look like names.
const KNOWN_FIELDS = new Set<string>([
  ...NVIDIA_SMI_GPU_FIELDS,
  ...NVIDIA_SMI_APP_FIELDS.map(canonicalNvidiaSmiField),
  'timestamp',
  'driver_version',
  'count',
  'uuid',
  'serial',
  'pci.bus_id',
  'pstate',
  'fan.speed',
  'memory.free',
  'memory.reserved',
  'clocks.gr',
  'clocks.mem',
  'clocks.max.sm',
  'power.default_limit',
  'enforced.power.limit',
  'compute_cap',
  'mig.mode.current',
  'process_name',
  'used_memory',
]);
const FIELD_CELL = /^[a-z][a-z0-9_.]*(?:\s\[[^\]]{1,16}\])?$/i;

function headerFields(cells: readonly string[]): string[] | undefined {
  if (cells.length === 0 || !cells.every((c) => FIELD_CELL.test(c))) return undefined;
  const fields = cells.map(canonicalNvidiaSmiField);
  return fields.some((f) => KNOWN_FIELDS.has(f)) ? fields : undefined;
}

export interface NvidiaSmiRow {
  /** 1-based line number in the text. */
  readonly line: number;
  /** Rows since the last header (or the start), 0-based: nvidia-smi lists boards in index order. */
  readonly ordinal: number;
  /** Canonical field name → the raw value text (trimmed, units still on). */
  readonly values: ReadonlyMap<string, string>;
}

export interface NvidiaSmiTable {
  /** The columns of the last block: its header's fields, else the fields asked for. */
  readonly fields: readonly string[];
  readonly rows: NvidiaSmiRow[];
  /** 1-based line numbers of header rows (they also appear in rejectedLines: they are not data). */
  readonly headerLines: number[];
  /** 1-based line numbers of non-empty lines that were not rows of the table. */
  readonly rejectedLines: number[];
}

/** The lines of a text, whatever its line endings (LF, CRLF, or a lone CR). */
export function textLines(text: string): string[] {
  return text.split(/\r\n|\n|\r/);
}

/** Splits one data line into exactly `width` cells; nvidia-smi does not quote, so surplus commas are
 *  taken to belong to the free-text column (a GPU or process name) and joined back there. */
function splitCells(line: string, width: number, freeTextAt: number): string[] | undefined {
  const parts = line.split(',').map((p) => p.trim());
  if (parts.length < width) return undefined;
  if (parts.length === width) return parts;
  if (freeTextAt < 0) return undefined;
  const extra = parts.length - width;
  return [...parts.slice(0, freeTextAt), parts.slice(freeTextAt, freeTextAt + extra + 1).join(', '), ...parts.slice(freeTextAt + extra + 1)];
}

// The column that gets a value's surplus commas back: a process name (a path) before a GPU name.
function freeTextColumn(columns: readonly string[]): number {
  const p = columns.indexOf('process_name');
  return p >= 0 ? p : columns.indexOf('name');
}

/**
 * Any `nvidia-smi --query-*=… --format=csv[,noheader][,nounits]` output as rows of named values. A header
 * row, wherever it appears, sets the columns for the rows after it; without one the rows are read in the
 * order of `fields`. Never throws; lines that are not rows (messages, truncated or overlong lines) are
 * listed in rejectedLines.
 */
export function parseNvidiaSmiCsv(text: string, fields: readonly string[] = NVIDIA_SMI_GPU_FIELDS): NvidiaSmiTable {
  let columns = fields.map(canonicalNvidiaSmiField);
  let ordinal = 0;
  const rows: NvidiaSmiRow[] = [];
  const headerLines: number[] = [];
  const rejectedLines: number[] = [];
  textLines(text).forEach((raw, i) => {
    if (raw.length > NVIDIA_SMI_MAX_LINE) {
      rejectedLines.push(i + 1);
      return;
    }
    const line = cleanNvidiaSmiLine(raw);
    if (line === '') return;
    const header = headerFields(line.split(',').map((c) => c.trim()));
    if (header) {
      columns = header;
      ordinal = 0;
      headerLines.push(i + 1);
      rejectedLines.push(i + 1);
      return;
    }
    const cells = splitCells(line, columns.length, freeTextColumn(columns));
    if (!cells) {
      rejectedLines.push(i + 1);
      return;
    }
    const values = new Map<string, string>();
    columns.forEach((c, k) => values.set(c, cells[k] ?? ''));
    rows.push({ line: i + 1, ordinal: ordinal++, values });
  });
  return { fields: columns, rows, headerLines, rejectedLines };
}

const NO_READING = /^\[[^\]]{0,80}\]$|^N\/A$|^ERR!$/i;

/** True for a number or one of nvidia-smi's "no reading" forms; false for text that is neither, which
 *  means the columns are not where they were expected to be (a different query, a shifted line). */
function isReading(raw: string): boolean {
  return nvidiaSmiNumber(raw) !== null || NO_READING.test(raw);
}

const GPU_METRICS = NVIDIA_SMI_GPU_FIELDS.slice(2);
const GPU_FIELD_AT: ReadonlyMap<string, number> = new Map(NVIDIA_SMI_GPU_FIELDS.map((f, k) => [f, k]));

/** `get` looks a field up (undefined: the query did not ask for it); `all` is every value of the row. */
export function sampleFrom(get: (field: string) => string | undefined, all: Iterable<string>, fallbackIndex?: number): NvidiaSmiSample | undefined {
  const rawIndex = get('index');
  const index = rawIndex === undefined ? (fallbackIndex ?? null) : nvidiaSmiNumber(rawIndex);
  const name = get('name') ?? '';
  if (index === null || !Number.isInteger(index) || index < 0 || name === '' || name.startsWith('[')) return undefined;
  const readings: (number | null)[] = [];
  let asked = 0;
  for (const f of GPU_METRICS) {
    const raw = get(f);
    if (raw === undefined) {
      readings.push(null);
      continue;
    }
    asked++;
    const v = nvidiaSmiNumber(raw);
    // Text where a reading belongs: the columns are not where they were expected (a shifted line).
    if (v === null && !NO_READING.test(raw)) return undefined;
    readings.push(v);
  }
  // A block with no GPU metric at all (a --query-compute-apps header names the GPU too) is not samples.
  if (asked === 0) return undefined;
  let fault: string | undefined;
  for (const v of all) if (fault === undefined && v.startsWith('[')) fault = nvidiaSmiFault(v);
  const [utilizationGpu, utilizationMemory, memoryUsedMiB, memoryTotalMiB, temperatureC, powerDrawW, powerLimitW, clocksSmMHz] = readings;
  const sample: NvidiaSmiSample = {
    index,
    name,
    utilizationGpu: utilizationGpu ?? null,
    utilizationMemory: utilizationMemory ?? null,
    memoryUsedMiB: memoryUsedMiB ?? null,
    memoryTotalMiB: memoryTotalMiB ?? null,
    temperatureC: temperatureC ?? null,
    powerDrawW: powerDrawW ?? null,
    powerLimitW: powerLimitW ?? null,
    clocksSmMHz: clocksSmMHz ?? null,
  };
  return fault === undefined ? sample : { ...sample, fault };
}

/** One `--query-gpu` line in NVIDIA_SMI_GPU_FIELDS order (units allowed), or undefined. Never throws. */
export function parseNvidiaSmiGpuLine(line: string): NvidiaSmiSample | undefined {
  if (line.length > NVIDIA_SMI_MAX_LINE) return undefined;
  const cells = splitCells(cleanNvidiaSmiLine(line), NVIDIA_SMI_GPU_FIELDS.length, 1);
  if (!cells) return undefined;
  return sampleFrom((f) => {
    const k = GPU_FIELD_AT.get(f);
    return k === undefined ? undefined : cells[k];
  }, cells);
}

/** One line of the runner's gpu.csv: epoch seconds, then a `--query-gpu` line. */
export function parseGpuCsvLine(line: string): NvidiaSmiSample | undefined {
  const comma = line.indexOf(',');
  if (comma < 0) return undefined;
  const ts = nvidiaSmiNumber(cleanNvidiaSmiLine(line.slice(0, comma)));
  if (ts === null) return undefined;
  const sample = parseNvidiaSmiGpuLine(line.slice(comma + 1));
  return sample && { ...sample, ts };
}

// "GPU-…" or, under MIG, "MIG-…" (drivers before 470 print "MIG-GPU-<uuid>/<gi>/<ci>"); nvidia-smi may also
// print a bracketed state. Loose on purpose: it only has to tell a UUID column from a misaligned number.
const GPU_UUID = /^(?:GPU|MIG)-[\w/.-]+$|^\[[^\]]{0,80}\]$/i;

export function processFrom(values: ReadonlyMap<string, string>): NvidiaSmiProcess | undefined {
  const pid = nvidiaSmiNumber(values.get('pid'));
  if (pid === null || !Number.isInteger(pid) || pid <= 0) return undefined;
  const used = values.get('used_memory');
  const uuid = values.get('uuid');
  if ((used !== undefined && !isReading(used)) || (uuid !== undefined && uuid !== '' && !GPU_UUID.test(uuid))) return undefined;
  return {
    pid,
    processName: values.get('process_name') ?? '',
    usedMemoryMiB: nvidiaSmiNumber(values.get('used_memory')),
    gpuUuid: values.get('uuid') ?? '',
  };
}

/** One `--query-compute-apps` line (optionally prefixed with epoch seconds, as in gpu_procs.csv). */
export function parseComputeAppLine(line: string, withTimestamp = false): NvidiaSmiProcess | undefined {
  if (line.length > NVIDIA_SMI_MAX_LINE) return undefined;
  let ts: number | undefined;
  let rest = cleanNvidiaSmiLine(line);
  if (withTimestamp) {
    const comma = rest.indexOf(',');
    const t = comma < 0 ? null : nvidiaSmiNumber(rest.slice(0, comma));
    if (t === null) return undefined;
    ts = t;
    rest = rest.slice(comma + 1);
  }
  const fields = NVIDIA_SMI_APP_FIELDS.map(canonicalNvidiaSmiField);
  const cells = splitCells(rest, fields.length, 1);
  if (!cells) return undefined;
  const proc = processFrom(new Map(fields.map((f, k) => [f, cells[k] ?? ''])));
  return proc && (ts === undefined ? proc : { ...proc, ts });
}

/** The CUDA version from nvidia-smi's banner ("CUDA Version: 12.4"; "CUDA UMD Version: 13.3" from driver
 *  610 on) or from `nvidia-smi --version` / `-q`; null where it says "N/A" or is absent. */
export function nvidiaSmiCudaVersion(text: string): string | null {
  const m = /CUDA (?:UMD )?Version\s*:\s*(\d+(?:\.\d+)*)/i.exec(text.slice(0, 1024 * 1024));
  return m?.[1] ?? null;
}

/** The driver version from the banner ("Driver Version: 550.54.15"; "KMD Version: 610.57.04" from 610 on). */
export function nvidiaSmiDriverVersion(text: string): string | null {
  const m = /(?:Driver|KMD) Version\s*:\s*(\d+(?:\.\d+)+)/i.exec(text.slice(0, 1024 * 1024));
  return m?.[1] ?? null;
}

export type NvidiaSmiProblemKind =
  'not-installed' | 'library-missing' | 'driver-mismatch' | 'access-blocked' | 'driver-not-loaded' | 'no-devices' | 'gpu-lost' | 'nvml-error' | 'failed';

export interface NvidiaSmiProblem {
  readonly kind: NvidiaSmiProblemKind;
  /** What it means and what to do, for the user. */
  readonly message: string;
  /** nvidia-smi's own words (the line that told), at most 200 characters; '' when it said nothing. */
  readonly detail: string;
}

const MESSAGES: Readonly<Record<NvidiaSmiProblemKind, string>> = {
  'not-installed': 'nvidia-smi is not installed on this host (no NVIDIA driver), or not on the PATH of a non-interactive shell.',
  'library-missing':
    'nvidia-smi cannot load the NVIDIA driver library (libnvidia-ml.so): the driver is not installed properly, or a container was started without the NVIDIA runtime (docker --gpus all).',
  'driver-mismatch':
    'The NVIDIA kernel driver and its user-space library have different versions, which usually follows a driver upgrade without a reboot: reboot the host (or reload the nvidia kernel modules).',
  'access-blocked':
    'The operating system blocks access to the GPU (WSL without GPU support from the Windows driver): update the Windows NVIDIA driver and WSL.',
  'driver-not-loaded':
    'The NVIDIA driver is not loaded, so nvidia-smi cannot talk to it: install the driver, or reboot if it was just installed or the kernel was updated.',
  'no-devices': 'The NVIDIA driver is loaded but finds no GPU: the GPU is missing, disabled, or taken by another driver (vfio, nouveau).',
  'gpu-lost': 'A GPU stopped responding (it fell off the bus or needs a reset): reset the GPU or reboot the host; runs on it will fail until then.',
  'nvml-error':
    'nvidia-smi could not start NVML. In a container this usually means it lost access to the GPU devices (for example after `systemctl daemon-reload` on the host): restart the container.',
  failed: 'nvidia-smi failed.',
};

// Checked in this order: the first that matches wins. Apostrophes are normalised first (a "couldn‘t"
// with a typographic quote was seen in the wild).
const PATTERNS: ReadonlyArray<readonly [NvidiaSmiProblemKind, RegExp]> = [
  [
    'not-installed',
    /command not found|nvidia-smi: not found|is not recognized as an internal or external command|no such file or directory: '?nvidia-smi|nvidia-smi: no such file or directory/i,
  ],
  ['library-missing', /couldn't find libnvidia-ml|libnvidia-ml\.so[.0-9]*: cannot open shared object file/i],
  ['driver-mismatch', /driver\/library version mismatch/i],
  ['access-blocked', /gpu access blocked by the operating system/i],
  ['driver-not-loaded', /couldn't communicate with the nvidia driver|nvidia-smi has failed/i],
  ['no-devices', /no devices were found/i],
  ['gpu-lost', /unable to determine the device handle|gpu is lost|fallen off the bus|gpu requires reset/i],
  ['nvml-error', /failed to initialize nvml/i],
];

// nvidia-smi's documented exit codes, for when it printed nothing recognisable.
const EXIT_CODES: Readonly<Record<number, NvidiaSmiProblemKind>> = {
  6: 'no-devices',
  9: 'driver-not-loaded',
  12: 'library-missing',
  15: 'gpu-lost',
  127: 'not-installed',
};

/**
 * What nvidia-smi's output (and exit code, when known) says is wrong with the host's GPUs, or undefined
 * when it reports no problem. Never throws; reads at most the first 256 KiB.
 */
export function diagnoseNvidiaSmi(output: string, exitCode?: number | null): NvidiaSmiProblem | undefined {
  const said = textLines(output.slice(0, 256 * 1024))
    .filter((l) => l.length <= NVIDIA_SMI_MAX_LINE)
    .map(cleanNvidiaSmiLine)
    .filter((l) => l !== '');
  const lines = said.map((l) => l.replace(/[\u2018\u2019\u02bc`´]/g, "'"));
  for (const [kind, re] of PATTERNS) {
    const at = lines.findIndex((l) => re.test(l));
    if (at < 0) continue;
    let message = MESSAGES[kind];
    if (kind === 'driver-mismatch') {
      const v = lines.map((l) => /NVML library version:\s*([0-9.]+)/i.exec(l)?.[1]).find((x) => x !== undefined);
      if (v) message = message.replace('have different versions', `have different versions (the library is ${v})`);
    } else if (kind === 'nvml-error') {
      const why = /failed to initialize nvml:\s*(.*)$/i.exec(lines[at]!)?.[1]?.trim();
      if (why && /insufficient permissions/i.test(why))
        message =
          'nvidia-smi could not start NVML: Insufficient Permissions. This user cannot open /dev/nvidia*: check the device permissions or the group that may use the GPU.';
      else if (why)
        message = `nvidia-smi could not start NVML (${why}). In a container this usually means it lost access to the GPU devices (for example after \`systemctl daemon-reload\` on the host): restart the container.`;
    }
    return { kind, message, detail: said[at]!.slice(0, 200) };
  }
  if (exitCode === undefined || exitCode === null || exitCode === 0) return undefined;
  const kind = EXIT_CODES[exitCode] ?? 'failed';
  const message = kind === 'failed' ? `nvidia-smi failed (exit ${exitCode}).` : MESSAGES[kind];
  return { kind, message, detail: (said[0] ?? '').slice(0, 200) };
}
