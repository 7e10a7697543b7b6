// GPU probe on connect: one round trip asks nvidia-smi for the boards (name, memory, driver) and reads the
// CUDA version from its banner. A host without nvidia-smi, or whose driver does not answer, gets a clear
// "no NVIDIA GPU" result with the reason instead of an error. The CSV and the failure texts are read by
// the shared parser in core/telemetry/nvidiaSmi.ts, tested on output quoted from issue reports and hand-written samples (test/fixtures/nvidia-smi).
import type { SshSession } from './session';
import type { CommandLimits } from './commandLimits';
import { diagnoseNvidiaSmi, nvidiaSmiCudaVersion, nvidiaSmiDriverVersion, nvidiaSmiNumber, parseNvidiaSmiCsv } from '../telemetry/nvidiaSmi';

export interface ProbedGpu {
  readonly index: number;
  readonly name: string;
  /** MiB; null where nvidia-smi printed [N/A]. */
  readonly memoryTotalMiB: number | null;
  readonly uuid: string;
}

export type GpuProbeResult =
  | {
      readonly kind: 'nvidia';
      readonly gpus: readonly ProbedGpu[];
      readonly count: number;
      readonly driverVersion: string;
      readonly cudaVersion: string | null;
      /** Present only when nvidia-smi listed boards but also reported a problem (one GPU lost among several). */
      readonly warning?: string;
    }
  | { readonly kind: 'none'; readonly reason: string };

export const PROBE_FIELDS = ['index', 'name', 'memory.total', 'driver_version', 'uuid'] as const;

export const GPU_PROBE_COMMAND =
  'if ! command -v nvidia-smi >/dev/null 2>&1; then echo RFT-NO-NVIDIA-SMI; exit 0; fi; ' +
  // The bare echo ends a last line nvidia-smi left unterminated (killed mid-line), so the marker stays on its own line.
  `nvidia-smi --query-gpu=${PROBE_FIELDS.join(',')} --format=csv,noheader,nounits 2>&1; rc=$?; echo; echo "RFT-RC $rc"; ` +
  // Driver 610 and later print "CUDA UMD Version: 13.3" in the banner where older ones print "CUDA Version: 12.4".
  "nvidia-smi 2>/dev/null | grep -oE 'CUDA (UMD )?Version: *[0-9][0-9.]*' | head -n 1; true";

// The probe prints a few lines per GPU; a megabyte is far beyond any real host and bounds the work.
const MAX_PROBE_OUTPUT = 1024 * 1024;

/** Parses GPU_PROBE_COMMAND's output; never throws. */
export function parseGpuProbe(out: string): GpuProbeResult {
  const text = out.length > MAX_PROBE_OUTPUT ? out.slice(0, MAX_PROBE_OUTPUT) : out;
  if (text.includes('RFT-NO-NVIDIA-SMI')) return { kind: 'none', reason: 'No NVIDIA GPU: nvidia-smi is not installed on this host.' };
  const lines = text.split(/\r\n|\n|\r/);
  // Normally a line of its own; from an older probe command it can trail an unterminated last line.
  const rcAt = lines.findIndex((l) => /RFT-RC -?\d+\s*$/.test(l));
  const marker = rcAt >= 0 ? /^(.*?)RFT-RC (-?\d+)\s*$/.exec(lines[rcAt]!) : null;
  const rc = marker ? Number(marker[2]) : NaN;
  const bodyText = [...lines.slice(0, rcAt < 0 ? lines.length : rcAt), marker?.[1] ?? ''].join('\n');

  const table = parseNvidiaSmiCsv(bodyText, PROBE_FIELDS);
  const gpus: ProbedGpu[] = [];
  const boardLines = new Set<number>();
  let driver = '';
  for (const row of table.rows) {
    const index = nvidiaSmiNumber(row.values.get('index'));
    const name = row.values.get('name') ?? '';
    if (index === null || !Number.isInteger(index) || index < 0 || name === '' || name.startsWith('[')) continue;
    gpus.push({ index, name, memoryTotalMiB: nvidiaSmiNumber(row.values.get('memory.total')), uuid: row.values.get('uuid') ?? '' });
    boardLines.add(row.line);
    const drv = row.values.get('driver_version') ?? '';
    if (!driver && /^\d+(?:\.\d+)+$/.test(drv)) driver = drv;
  }
  // Only the lines that were not boards can say what went wrong (and a GPU name must never be read as one).
  const messages = bodyText.split('\n').filter((_, i) => !boardLines.has(i + 1));
  const problem = diagnoseNvidiaSmi(messages.join('\n'), Number.isFinite(rc) ? rc : undefined);
  const banner = lines.slice(rcAt < 0 ? lines.length : rcAt + 1).join('\n');

  if (gpus.length === 0) {
    if (!Number.isFinite(rc) && !problem) {
      return { kind: 'none', reason: 'No NVIDIA GPU available: the GPU probe gave no answer (the command was cut short or its output was unreadable).' };
    }
    if (rc !== 0 || problem) {
      const said = problem?.detail || messages.map((l) => l.trim()).find((l) => l !== '') || '';
      const head = `No NVIDIA GPU available: nvidia-smi failed${Number.isFinite(rc) ? ` (exit ${rc})` : ''}${said ? `: ${said.slice(0, 200)}` : ''}`;
      return { kind: 'none', reason: problem && problem.kind !== 'failed' ? `${head} — ${problem.message}` : head };
    }
    return { kind: 'none', reason: 'No NVIDIA GPU: nvidia-smi lists no devices.' };
  }
  const result = {
    kind: 'nvidia' as const,
    gpus,
    count: gpus.length,
    driverVersion: driver || nvidiaSmiDriverVersion(banner) || '',
    cudaVersion: nvidiaSmiCudaVersion(banner) ?? nvidiaSmiCudaVersion(text),
  };
  return problem ? { ...result, warning: `${problem.message}${problem.detail ? ` (nvidia-smi: ${problem.detail})` : ''}` } : result;
}

/** nvidia-smi answers in a second or two; a driver stuck in a GPU reset can take tens of seconds to give up. */
export const GPU_PROBE_TIMEOUT_MS = 60_000;

/**
 * Fails with a HostCommandError (commandLimits.ts) naming the host when the probe says nothing within its time
 * limit or prints more than MAX_PROBE_OUTPUT; `limits` overrides both (tests).
 */
export async function probeGpus(session: SshSession, signal?: AbortSignal, limits: Omit<CommandLimits, 'what'> = {}): Promise<GpuProbeResult> {
  const r = await session.exec(GPU_PROBE_COMMAND, {
    what: 'probing its GPUs (nvidia-smi)',
    timeoutMs: GPU_PROBE_TIMEOUT_MS,
    maxOutputBytes: MAX_PROBE_OUTPUT,
    ...limits,
    ...(signal ? { signal } : {}),
  });
  return parseGpuProbe(r.stdout.toString('utf8'));
}

/** One line for a tree item or a log: "2 × NVIDIA A100-SXM4-40GB (40 GiB), driver 535.104.05, CUDA 12.2". */
export function describeGpus(r: GpuProbeResult): string {
  if (r.kind === 'none') return r.reason;
  const groups = new Map<string, number>();
  for (const g of r.gpus) {
    const key = `${g.name}${g.memoryTotalMiB !== null ? ` (${Math.round(g.memoryTotalMiB / 1024)} GiB)` : ''}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const boards = [...groups].map(([k, n]) => `${n} × ${k}`).join(' + ');
  const driver = r.driverVersion ? `, driver ${r.driverVersion}` : '';
  return `${boards}${driver}${r.cudaVersion ? `, CUDA ${r.cudaVersion}` : ''}${r.warning ? `. Warning: ${r.warning}` : ''}`;
}
