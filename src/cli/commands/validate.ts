// `remote-finetune validate <paths…> [--format text|json] [--gpu <type>]`: the editor's checks for CI.
// Output contract (DESIGN.md "Conventions"): JSON array of {file,line,column,endLine,endColumn,
// severity,code,message}, 1-based; exit 1 when any error is present, 0 otherwise, 2 on bad usage.
import { readdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute, resolve, relative, join } from 'node:path';
import type { CliCommand, CliIo } from '../command';
import { validateBytes } from '../../core/config/validate';
import { localFiles } from '../../core/config/nodeFiles';
import { readBoundedBytesSync } from '../../core/config/boundedRead';
import { LineIndex } from '../../core/config/text';
import { nameSuggestsConfig, syntaxOf } from '../../core/config/kinds';
import { findGpu, GPU_IDS } from '../../core/gpu/catalog';
import type { GpuInfo } from '../../core/gpu/catalog';
import type { ConfigDiagnostic } from '../../core/config/types';

export interface CliDiagnostic {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly endLine: number;
  readonly endColumn: number;
  readonly severity: 'error' | 'warning' | 'info';
  readonly code: string;
  readonly message: string;
}

export interface ParsedArgs {
  readonly paths: string[];
  readonly format: 'text' | 'json';
  readonly gpu: GpuInfo | undefined;
}

export function parseArgs(args: readonly string[], io: CliIo, usage: string): ParsedArgs | number {
  const paths: string[] = [];
  let format: 'text' | 'json' = 'text';
  let gpu: GpuInfo | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const eq = a.indexOf('=');
    const name = a.startsWith('--') && eq !== -1 ? a.slice(0, eq) : a;
    const inline = a.startsWith('--') && eq !== -1 ? a.slice(eq + 1) : undefined;
    const value = (): string | undefined => inline ?? args[++i];
    if (name === '--format') {
      const v = value();
      if (v !== 'text' && v !== 'json') {
        io.stderr(`remote-finetune: --format takes text or json\n${usage}`);
        return 2;
      }
      format = v;
    } else if (name === '--gpu') {
      const v = value();
      gpu = v ? findGpu(v) : undefined;
      if (!gpu) {
        io.stderr(`remote-finetune: unknown GPU '${v ?? ''}'; known: ${GPU_IDS.join(', ')}\n`);
        return 2;
      }
    } else if (name === '--help' || name === '-h') {
      io.stdout(usage);
      return 0;
    } else if (a.startsWith('-') && a !== '-') {
      io.stderr(`remote-finetune: unknown option '${a}'\n${usage}`);
      return 2;
    } else {
      paths.push(a);
    }
  }
  return { paths, format, gpu };
}

const SKIP_DIRS = new Set(['node_modules', '.git', '.venv', 'venv', '__pycache__', 'dist', 'out', '.test-output']);

/** Files a directory argument stands for: every YAML/JSON/.env file below it. */
function expand(p: string, out: string[], depth = 0): void {
  const st = statSync(p);
  if (!st.isDirectory()) {
    out.push(p);
    return;
  }
  if (depth > 12) return;
  for (const name of readdirSync(p).sort()) {
    const child = join(p, name);
    let s;
    try {
      s = statSync(child);
    } catch {
      continue;
    }
    if (s.isDirectory()) {
      if (!SKIP_DIRS.has(name)) expand(child, out, depth + 1);
    } else if (syntaxOf(name) !== 'other') out.push(child);
  }
}

function toCli(file: string, text: string | undefined, d: ConfigDiagnostic, index?: LineIndex): CliDiagnostic {
  const li = index ?? new LineIndex(text ?? '');
  const s = li.positionAt(d.start);
  const e = li.positionAt(d.end);
  return {
    file,
    line: s.line + 1,
    column: s.character + 1,
    endLine: e.line + 1,
    endColumn: e.character + 1,
    severity: d.severity,
    code: d.code,
    message: d.message,
  };
}

function formatText(ds: readonly CliDiagnostic[]): string {
  return ds.map((d) => `${d.file}:${d.line}:${d.column}: ${d.severity} ${d.code}: ${d.message}\n`).join('');
}

const USAGE =
  'usage: remote-finetune validate <paths…> [--format text|json] [--gpu <type>]\n' +
  '  Checks finetune.yaml, accelerate/DeepSpeed/trainer/sweep/Axolotl/LLaMA-Factory configs and .env files.\n' +
  '  A directory means every config below it. Exit 1 when any error is found, 0 otherwise, 2 on bad usage.\n';

/** Over this a file is not even read (the check itself stops at 1 MB and says so: RFT004). */
const CLI_READ_CAP = 64 * 1024 * 1024;

/** What a config checked from the command line may read: the current folder when it lies there, else its own folder. */
export function cliRoots(cwd: string, file: string): string[] {
  const rel = relative(cwd, file);
  return rel.startsWith('..') || isAbsolute(rel) ? [dirname(file)] : [cwd];
}

export const validateCommand: CliCommand = {
  name: 'validate',
  summary: 'check training configs (same checks as the editor)',
  usage: USAGE,
  async run(args, io) {
    const parsed = parseArgs(args, io, USAGE);
    if (typeof parsed === 'number') return parsed;
    if (parsed.paths.length === 0) {
      io.stderr(`remote-finetune: validate needs at least one path\n${USAGE}`);
      return 2;
    }
    const files: string[] = [];
    for (const p of parsed.paths) {
      try {
        expand(resolve(io.cwd, p), files);
      } catch {
        io.stderr(`remote-finetune: cannot read '${p}'\n`);
        return 2;
      }
    }
    const all: CliDiagnostic[] = [];
    for (const abs of files) {
      // Bounded like the editor's reads: a FIFO or device named like a config must not hang a CI job.
      const got = readBoundedBytesSync(abs, { cap: CLI_READ_CAP });
      if (!('bytes' in got)) {
        const why = 'missing' in got ? 'it does not exist' : got.refused;
        if (parsed.paths.some((p) => resolve(io.cwd, p) === abs)) {
          io.stderr(`remote-finetune: cannot read '${abs}': ${why}\n`);
          return 2;
        }
        if (nameSuggestsConfig(abs)) io.stderr(`remote-finetune: not checked: '${relative(io.cwd, abs) || abs}': ${why}\n`);
        continue;
      }
      const r = validateBytes(got.bytes, {
        fileName: abs,
        files: localFiles(cliRoots(io.cwd, abs)),
        libraryParseLimit: Infinity,
        ...(parsed.gpu ? { gpu: parsed.gpu } : {}),
      });
      const shown = relative(io.cwd, abs) || abs;
      const index = new LineIndex(r.text ?? '');
      for (const d of r.diagnostics) all.push(toCli(shown.startsWith('..') ? abs : shown, r.text, d, index));
    }
    io.stdout(parsed.format === 'json' ? `${JSON.stringify(all)}\n` : formatText(all));
    return all.some((d) => d.severity === 'error') ? 1 : 0;
  },
};
