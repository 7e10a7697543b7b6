// The one entry point: text (or bytes) + file name → kind and diagnostics. Never throws: any
// unexpected failure inside a check becomes an RFT009 diagnostic instead of breaking the editor.
import type { ConfigDiagnostic, ConfigKind, FileAccess } from './types';
import { textOf } from './types';
import type { DocNode } from './ast';
import { nodeAt, scalarAt } from './ast';
import { decodeText, EDITOR_LIBRARY_PARSE_LIMIT, MAX_CHECKED_BYTES } from './text';
import { detectKind, jsonMayBeConfig, nameSuggestsConfig, roughTopLevel, syntaxOf, isRunSpecName } from './kinds';
import { parseConfigText } from './parse';
import { isInterpolation, schemaInput } from './schemaInput';
import { checkSchema } from './schemaCheck';
import { KINDS } from './registry';
import { extractFacts } from './rules/facts';
import { checkSecrets, checkTrainingFacts } from './rules/crossChecks';
import type { RuleContext } from './rules/crossChecks';
import { checkAccelerate, checkDeepSpeedBatch } from './rules/kindRules';
import { checkSweep } from './rules/sweepRules';
import { checkRunSpec, runSpecUnknownKeyFate } from './rules/runSpecRules';
import { checkBudget } from './rules/budgetRules';
import { checkDotenv } from './dotenv';
import { dirName, join } from '../pathText';
import type { GpuInfo } from '../gpu/catalog';
import { findGpu } from '../gpu/catalog';
import type { RunSpecEstimate } from './runSpecEstimate';
import type { RunSpec } from './runSpecDefaults';
import { replaceNode } from './edits';
import { sensibleValue } from './sensibleValues';
import { checkLearningRate } from './rules/learningRate';
import { checkProviderGpu } from './rules/providerGpu';
import { checkTargetNames } from './rules/targetNames';
import { checkInstanceFit } from './rules/instanceFit';
import { checkOffloadParamStage } from './rules/deepSpeedOffload';

export interface ValidateOptions {
  /** Path (absolute for cross-file checks) or just a name; decides the kind with the content. */
  readonly fileName: string;
  /** Force a kind (the CLI's and tests' override); otherwise detected. */
  readonly kind?: ConfigKind;
  /** Target GPU for hardware rules when the file itself names none (CLI --gpu, or the run spec beside it). */
  readonly gpu?: GpuInfo;
  readonly files?: FileAccess;
  /** Largest document handed to the full (slow) YAML/JSON parser; the CLI passes Infinity. */
  readonly libraryParseLimit?: number;
  /** false: every YAML document goes to the full parser (the validate benchmark measures what fastYaml.ts buys). */
  readonly fastYaml?: boolean;
}

export interface ValidateResult {
  readonly kind: ConfigKind | undefined;
  readonly diagnostics: ConfigDiagnostic[];
  readonly root?: DocNode;
  readonly estimate?: RunSpecEstimate;
  /** A run spec the schema accepted, typed (defaults not filled in: normaliseRunSpec does that). */
  readonly runSpec?: RunSpec;
  /** The full parser was not run (the document is over `libraryParseLimit`): the editor checks it in the background. */
  readonly deferred?: boolean;
}

export function validateBytes(bytes: Uint8Array, opts: ValidateOptions): ValidateResult & { text?: string } {
  if (bytes.length > MAX_CHECKED_BYTES) return tooLarge(bytes.length, opts);
  const d = decodeText(bytes);
  if (!d.ok) {
    if (!opts.kind && !nameSuggestsConfig(opts.fileName)) return { kind: undefined, diagnostics: [] };
    return {
      kind: opts.kind,
      diagnostics: [
        {
          start: 0,
          end: 0,
          severity: 'error',
          code: 'RFT003',
          message:
            d.reason === 'binary'
              ? 'This is a binary file, not a config: it has NUL bytes. Check that the right file is named here.'
              : `The file is not valid UTF-8 (first bad byte at offset ${d.offset}). Save it as UTF-8.`,
        },
      ],
    };
  }
  return { ...validateText(d.text, opts), text: d.text };
}

function tooLarge(size: number, opts: ValidateOptions): ValidateResult {
  if (!opts.kind && !nameSuggestsConfig(opts.fileName)) return { kind: undefined, diagnostics: [] };
  return {
    kind: opts.kind,
    diagnostics: [
      {
        start: 0,
        end: 0,
        severity: 'warning',
        code: 'RFT004',
        message: `The file is ${(size / 1048576).toFixed(1)} MB; configs above ${MAX_CHECKED_BYTES / 1048576} MB are not checked. Is this the right file?`,
      },
    ],
  };
}

export function validateText(text: string, opts: ValidateOptions): ValidateResult {
  try {
    return validateUnsafe(text, opts);
  } catch (e) {
    return {
      kind: opts.kind,
      diagnostics: [
        {
          start: 0,
          end: Math.min(1, text.length),
          severity: 'error',
          code: 'RFT009',
          message: `Internal error while checking this file (${e instanceof Error ? e.message : String(e)}); please report it.`,
        },
      ],
    };
  }
}

function validateUnsafe(text: string, opts: ValidateOptions): ValidateResult {
  if (text.length > MAX_CHECKED_BYTES) return tooLarge(text.length, opts);
  const syntax = syntaxOf(opts.fileName);
  if (opts.kind === 'dotenv' || (!opts.kind && syntax === 'dotenv')) {
    return {
      kind: 'dotenv',
      diagnostics: checkDotenv(text, { fileName: opts.fileName, ...(opts.files ? { files: opts.files } : {}), wandbEnabled: wandbEnabledNextTo(opts) }),
    };
  }
  const parseSyntax = syntax === 'json' || (opts.kind === 'deepspeed' && syntax !== 'yaml') ? 'json' : 'yaml';
  if (syntax === 'other' && !opts.kind) return { kind: undefined, diagnostics: [] };
  if (syntax === 'json' && !opts.kind && !jsonMayBeConfig(opts.fileName, text)) return { kind: undefined, diagnostics: [] };
  // Cheap gate: a file that is not named like a config and has none of the keys any kind needs is
  // not parsed at all (random YAML in a workspace costs nothing).
  const parsed = parseConfigText(text, parseSyntax, {
    libraryLimit: opts.libraryParseLimit ?? EDITOR_LIBRARY_PARSE_LIMIT,
    ...(opts.fastYaml === false ? { fast: false } : {}),
  });
  const kind = opts.kind ?? detectKind(opts.fileName, parsed.root ?? (parsed.diagnostics.length > 0 ? roughTopLevel(text) : undefined));
  if (!kind) return { kind: undefined, diagnostics: [] };
  const out: ConfigDiagnostic[] = [...parsed.diagnostics];
  const root = parsed.root;
  const info = KINDS[kind];
  if (root === undefined) {
    if (parsed.deferred) return { kind, diagnostics: out, deferred: true };
    if (out.length === 0 && kind === 'runspec')
      out.push({ start: 0, end: 0, severity: 'error', code: 'RFT008', message: 'The run spec is empty: start with version: 1 and a target.' });
    return { kind, diagnostics: out };
  }
  if (root.kind !== 'map') {
    out.push({
      start: root.start,
      end: Math.max(root.end, root.start + 1),
      severity: 'error',
      code: 'RFT008',
      message: `A ${info.title} must be a mapping of keys to values at the top level, not ${root.kind === 'seq' ? 'a list' : 'a single value'}.`,
    });
    return { kind, diagnostics: out };
  }
  let runSpec: RunSpec | undefined;
  if (info.schema) {
    out.push(
      ...checkSchema({
        schema: info.schema,
        // The registry holds the run spec's zod schema for this kind, so its output is a RunSpec.
        ...(kind === 'runspec' ? { parsed: (data: unknown) => (runSpec = data as RunSpec) } : {}),
        root,
        value: schemaInput(root, kind, parseSyntax),
        text,
        syntax: parseSyntax,
        codeBase: info.codeBase,
        reportUnknown: info.reportUnknown,
        ...(kind === 'runspec' ? { unknownKeyFate: runSpecUnknownKeyFate } : { skipValue: isInterpolation }),
        sensible: (path) => sensibleValue(kind, root, path, parseSyntax),
      }),
    );
  }
  const gpuFromSpec = kind === 'runspec' ? gpuOf(scalarAt(root, ['target', 'gpu'])) : undefined;
  const ctx: RuleContext = { text, syntax: parseSyntax, root, gpu: opts.gpu ?? gpuFromSpec ?? gpuNextTo(opts) };
  const facts = extractFacts(kind, root);
  if (facts) out.push(...checkTrainingFacts(facts, ctx));
  out.push(...checkSecrets(root));
  out.push(...checkLearningRate(kind, ctx));
  let estimate: RunSpecEstimate | undefined;
  switch (kind) {
    case 'accelerate':
      out.push(...checkAccelerate(ctx));
      out.push(...checkOffloadParamStage(ctx, 'accelerate'));
      break;
    case 'deepspeed':
      out.push(...checkDeepSpeedBatch(ctx, undefined));
      out.push(...checkOffloadParamStage(ctx, 'deepspeed'));
      break;
    case 'sweep':
      out.push(...checkSweep(ctx));
      break;
    case 'runspec': {
      suggestCatalogGpu(root, out, parseSyntax);
      out.push(...checkProviderGpu(ctx));
      out.push(...checkTargetNames(ctx));
      out.push(...checkInstanceFit(ctx));
      const r = checkRunSpec({ ...ctx, fileName: opts.fileName, files: opts.files });
      out.push(...r.diagnostics);
      out.push(...checkBudget(root, opts.fileName, opts.files, r.estimate));
      estimate = r.estimate;
      break;
    }
    default:
      break;
  }
  return { kind, diagnostics: dedupe(out), root, ...(estimate ? { estimate } : {}), ...(runSpec ? { runSpec } : {}) };
}

/** target.gpu written the way clouds spell it (nvidia-tesla-t4, a100): offer the catalog id. */
function suggestCatalogGpu(root: DocNode, out: ConfigDiagnostic[], syntax: 'yaml' | 'json'): void {
  const n = nodeAt(root, ['target', 'gpu']);
  if (n?.kind !== 'scalar' || typeof n.value !== 'string') return;
  const g = findGpu(n.value);
  if (!g || g.id === n.value) return;
  const i = out.findIndex((d) => d.code === 'RFT104' && d.start === n.start);
  if (i === -1) return;
  const d = out[i]!;
  out[i] = {
    ...d,
    message: `${d.message} '${n.value}' is the ${g.name}: write ${g.id}.`,
    fixes: [{ title: `Change to '${g.id}'`, edits: [replaceNode(n, g.id, syntax)], preferred: true }],
  };
}

function gpuOf(v: unknown): GpuInfo | undefined {
  return typeof v === 'string' ? findGpu(v) : undefined;
}

function dedupe(ds: ConfigDiagnostic[]): ConfigDiagnostic[] {
  const seen = new Set<string>();
  const out: ConfigDiagnostic[] = [];
  for (const d of ds) {
    const k = `${d.start}:${d.end}:${d.code}:${d.message}`;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(d);
  }
  return out.sort((a, b) => a.start - b.start || a.code.localeCompare(b.code));
}

/** The run spec in the same folder (or its parent) tells accelerate/DeepSpeed/trainer files which GPU they run on. */
function siblingRunSpec(opts: ValidateOptions): DocNode | undefined {
  if (!opts.files || isRunSpecName(opts.fileName)) return undefined;
  let dir = dirName(opts.fileName);
  for (let i = 0; i < 3; i++) {
    for (const n of ['finetune.yaml', 'finetune.yml']) {
      const t = textOf(opts.files.read(join(dir, n)));
      if (t !== undefined && t.length < 1_000_000) return parseConfigText(t, 'yaml').root;
    }
    const up = dirName(dir);
    if (up === dir) break;
    dir = up;
  }
  return undefined;
}

function gpuNextTo(opts: ValidateOptions): GpuInfo | undefined {
  return gpuOf(scalarAt(siblingRunSpec(opts), ['target', 'gpu']));
}

function wandbEnabledNextTo(opts: ValidateOptions): boolean {
  const spec = siblingRunSpec(opts);
  return scalarAt(spec, ['wandb', 'enabled']) === true && nodeAt(spec, ['env_file']) !== undefined;
}
