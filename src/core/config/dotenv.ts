// .env files: syntax, duplicates, tokens the configs need, numeric overrides, paths that must
// exist, CUDA_VISIBLE_DEVICES and PYTORCH_CUDA_ALLOC_CONF syntax, and tracked secrets.
// The syntax is python-dotenv's: KEY=value, `export`, # comments, and '…' / "…" values that may span
// lines (a PEM key, a JSON blob); single quotes are literal, double quotes read \n \" \\ and the like.
import type { ConfigDiagnostic, FileAccess, Fix } from './types';
import { isSecretKey, looksLikeExamplePlaceholder, looksLikePlaceholder, tokenKind } from './tokenPatterns';
import { baseName } from './kinds';
import { dirName, join } from '../pathText';
import { endpointDiagnostics } from './dotenvEndpoints';
import { controlVariableDiagnostics } from './controlVariables';

export interface EnvEntry {
  readonly key: string;
  /** The value as the program sees it: quotes removed, double-quote escapes read, a quoted value's line breaks kept. */
  readonly value: string;
  /** 0-based line of the key (a quoted value may run onto later lines). */
  readonly line: number;
  readonly keyStart: number;
  readonly keyEnd: number;
  readonly valueStart: number;
  readonly valueEnd: number;
  readonly lineStart: number;
  /** Offset just past the newline of the entry's last line (the closing quote's line for a value that spans lines). */
  readonly lineEnd: number;
}

export interface EnvParse {
  readonly entries: EnvEntry[];
  readonly diagnostics: ConfigDiagnostic[];
}

const KEY_RE = /^[A-Za-z_][A-Za-z0-9_.]*$/;

/** What a POSIX shell can export (and so what the run's env file, sourced by sh, can carry). */
export function isShellName(key: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key);
}

/** The escapes python-dotenv reads inside double quotes; any other backslash stays as written. */
const DQ_ESCAPES: ReadonlyMap<string, string> = new Map([
  ['\\', '\\'],
  ["'", "'"],
  ['"', '"'],
  ['a', '\x07'],
  ['b', '\b'],
  ['f', '\f'],
  ['n', '\n'],
  ['r', '\r'],
  ['t', '\t'],
  ['v', '\v'],
]);

/**
 * The quoted value whose opening quote is text[open]; it may span lines (python-dotenv, docker compose and
 * Node's dotenv all accept that). Single quotes are literal; in double quotes a backslash escapes the next
 * character (\n, \", \\, …). A CRLF inside the value reads as LF, as python-dotenv's text-mode read gives it.
 * `end` is the offset just past the closing quote; undefined when the quote never closes.
 */
function readQuoted(text: string, open: number): { value: string; end: number } | undefined {
  if (text[open] === "'") {
    const close = text.indexOf("'", open + 1);
    return close === -1 ? undefined : { value: text.slice(open + 1, close).replace(/\r\n/g, '\n'), end: close + 1 };
  }
  let value = '';
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') return { value, end: i + 1 };
    if (c === '\\') {
      const esc = DQ_ESCAPES.get(text[i + 1] ?? '');
      if (esc !== undefined) {
        value += esc;
        i++;
        continue;
      }
    }
    if (c === '\r' && text[i + 1] === '\n') continue;
    value += c;
  }
  return undefined;
}

/** What follows a closing quote up to the end of its line: blanks and a # comment only, or the offending text. */
function afterClose(text: string, from: number): { ok: boolean; start: number; end: number; next: number; last: boolean } {
  const nl = text.indexOf('\n', from);
  const next = nl === -1 ? text.length : nl + 1;
  let rest = text.slice(from, nl === -1 ? text.length : nl);
  if (rest.endsWith('\r')) rest = rest.slice(0, -1);
  const start = from + rest.length - rest.trimStart().length;
  return { ok: /^\s*(#.*)?$/.test(rest), start, end: from + rest.trimEnd().length, next, last: nl === -1 };
}

function newlines(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = text.indexOf('\n', from); i !== -1 && i < to; i = text.indexOf('\n', i + 1)) n++;
  return n;
}

export function parseDotenv(text: string): EnvParse {
  const entries: EnvEntry[] = [];
  const diagnostics: ConfigDiagnostic[] = [];
  let pos = 0;
  let line = 0;
  while (pos <= text.length) {
    const nl = text.indexOf('\n', pos);
    const end = nl === -1 ? text.length : nl;
    // Where the next entry starts: the next line, or past the last line of a value that spans lines.
    let next = nl === -1 ? text.length : nl + 1;
    let last = nl === -1;
    let raw = text.slice(pos, end);
    if (raw.endsWith('\r')) raw = raw.slice(0, -1);
    const lead = raw.length - raw.trimStart().length;
    const body = raw.trim();
    if (body !== '' && !body.startsWith('#')) {
      let off = lead;
      let rest = raw.slice(lead);
      const exp = /^export\s+/.exec(rest);
      if (exp) {
        off += exp[0].length;
        rest = rest.slice(exp[0].length);
      }
      const eq = rest.indexOf('=');
      if (eq === -1 && KEY_RE.test(rest.trimEnd())) {
        // A name alone: python-dotenv loads it as a key without a value (None) and docker's
        // env_file passes the variable through from the host; it sets nothing here.
      } else if (eq === -1) {
        diagnostics.push({
          start: pos + lead,
          end: pos + raw.length,
          severity: 'error',
          code: 'RFT600',
          message: `Line ${line + 1} is not KEY=value. Add "=" and a value, or start the line with # to make it a comment.`,
        });
      } else {
        const keyRaw = rest.slice(0, eq);
        const key = keyRaw.trimEnd();
        const keyStart = pos + off;
        const keyEnd = keyStart + key.length;
        if (!KEY_RE.test(key)) {
          diagnostics.push({
            start: keyStart,
            end: Math.max(keyEnd, keyStart + 1),
            severity: 'error',
            code: 'RFT600',
            message: `'${key}' is not a valid variable name: use letters, digits and _, not starting with a digit.`,
          });
        } else if (!isShellName(key)) {
          diagnostics.push({
            start: keyStart,
            end: keyEnd,
            severity: 'warning',
            code: 'RFT608',
            message: `'${key}' is not a shell variable name: python-dotenv reads it, but a process environment set by a shell cannot carry it, so it is left out of the run's environment. Use letters, digits and _ only.`,
          });
        }
        let vOff = off + eq + 1;
        let vRaw = rest.slice(eq + 1);
        const vLead = vRaw.length - vRaw.trimStart().length;
        vOff += vLead;
        vRaw = vRaw.trimStart();
        let value: string;
        let valueLen: number;
        const q = vRaw[0];
        if (q === '"' || q === "'") {
          const open = pos + vOff;
          const quoted = readQuoted(text, open);
          const tail = quoted ? afterClose(text, quoted.end) : undefined;
          // A value that runs onto later lines must end with its closing quote at the end of a line;
          // otherwise (most often a quote left open above a quoted value) it is unclosed, as before.
          const spans = quoted !== undefined && quoted.end > end;
          if (!quoted || !tail || (spans && !tail.ok)) {
            const kind = q === '"' ? 'double' : 'single';
            const inside = q === '"' ? 'write a " inside it as \\"' : "a single-quoted value cannot contain '";
            const why = quoted
              ? ` the ${q} on line ${line + 1 + newlines(text, pos, quoted.end)} is followed by more text, so it does not end this value.`
              : '';
            diagnostics.push({
              start: open,
              end: pos + raw.length,
              severity: 'error',
              code: 'RFT600',
              message: `Unclosed ${kind} quote:${why} ${quoted ? 'Add' : 'add'} the closing ${q} (a value may span lines; ${inside}).`,
            });
            value = vRaw.slice(1);
            valueLen = vRaw.length;
          } else {
            value = quoted.value;
            valueLen = quoted.end - open;
            if (!tail.ok) {
              diagnostics.push({
                start: tail.start,
                end: tail.end,
                severity: 'error',
                code: 'RFT600',
                message: `Text after the closing ${q} of ${key}: python-dotenv skips the whole line. Put it inside the quotes${q === '"' ? ' (a " inside is written \\")' : ''}, or start a comment with #.`,
              });
            }
            if (spans) {
              next = tail.next;
              last = tail.last;
            }
          }
        } else {
          const hash = vRaw.search(/\s#/);
          const v = (hash === -1 ? vRaw : vRaw.slice(0, hash)).trimEnd();
          value = v;
          valueLen = v.length;
        }
        entries.push({ key, value, line, keyStart, keyEnd, valueStart: pos + vOff, valueEnd: pos + vOff + valueLen, lineStart: pos, lineEnd: next });
      }
    }
    if (last) break;
    line += newlines(text, pos, next);
    pos = next;
  }
  return { entries, diagnostics };
}

export interface DotenvContext {
  readonly fileName: string;
  readonly files?: FileAccess;
  /** True when a run spec next to this file reports to W&B. */
  readonly wandbEnabled?: boolean;
}

const HF_TOKENS = ['HF_TOKEN', 'HUGGINGFACE_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HUGGINGFACEHUB_API_TOKEN'];
const POSITIVE_INTS = [
  'BATCH_SIZE',
  'GRAD_ACCUM',
  'GRADIENT_ACCUMULATION_STEPS',
  'MAX_STEPS',
  'EPOCHS',
  'NUM_EPOCHS',
  'NUM_TRAIN_EPOCHS',
  'PER_DEVICE_TRAIN_BATCH_SIZE',
  'MICRO_BATCH_SIZE',
  'SAVE_STEPS',
  'EVAL_STEPS',
  'LOGGING_STEPS',
  'LORA_R',
  'NUM_GPUS',
  'NPROC_PER_NODE',
];
const PATH_KEYS =
  /^(ACCELERATE_CONFIG|ACCELERATE_CONFIG_FILE|DEEPSPEED_CONFIG|DS_CONFIG|DATASET_PATH|[A-Z0-9_]*_DATASET_PATH|TRAIN_DATA_PATH|EVAL_DATA_PATH|TRAIN_FILE|EVAL_FILE|DATA_PATH)$/;
const ALLOC_KEYS: Record<string, (v: string) => string | undefined> = {
  max_split_size_mb: (v) => (/^\d+$/.test(v) && Number(v) > 20 ? undefined : 'an integer number of MB greater than 20'),
  roundup_power2_divisions: (v) => (/^(\d+|\[[\d:,\s>]+\])$/.test(v) ? undefined : 'a power of two or a [size:divisions,…] list'),
  garbage_collection_threshold: (v) => (Number(v) > 0 && Number(v) < 1 ? undefined : 'a fraction between 0 and 1'),
  expandable_segments: (v) => (/^(True|False)$/.test(v) ? undefined : 'True or False'),
  backend: (v) => (/^(native|cudaMallocAsync)$/.test(v) ? undefined : 'native or cudaMallocAsync'),
  pinned_use_cuda_host_register: (v) => (/^(True|False)$/.test(v) ? undefined : 'True or False'),
  pinned_num_register_threads: (v) => (/^\d+$/.test(v) ? undefined : 'an integer'),
  release_lock_on_cudamalloc: (v) => (/^(True|False)$/.test(v) ? undefined : 'True or False'),
  pinned_use_background_threads: (v) => (/^(True|False)$/.test(v) ? undefined : 'True or False'),
};

export function checkDotenv(text: string, ctx: DotenvContext): ConfigDiagnostic[] {
  const { entries, diagnostics: out } = parseDotenv(text);
  const isExample = /\.(example|sample|template|dist)$/i.test(baseName(ctx.fileName)) || /example/i.test(baseName(ctx.fileName));
  const dir = dirName(ctx.fileName);
  const seen = new Map<string, EnvEntry>();
  const at = (e: EnvEntry, which: 'key' | 'value'): { start: number; end: number } =>
    which === 'key' ? { start: e.keyStart, end: e.keyEnd } : { start: e.valueStart, end: Math.max(e.valueEnd, e.valueStart + 1) };
  const realTokens: EnvEntry[] = [];

  for (const e of entries) {
    const prev = seen.get(e.key);
    if (prev) {
      const fix: Fix = {
        title: `Remove the earlier ${e.key} (line ${prev.line + 1})`,
        edits: [{ start: prev.lineStart, end: prev.lineEnd, newText: '' }],
        preferred: true,
      };
      out.push({
        ...at(e, 'key'),
        severity: 'warning',
        code: 'RFT601',
        message: `${e.key} is set twice (first on line ${prev.line + 1}); the last one wins. Remove one of them.`,
        fixes: [fix],
      });
    }
    seen.set(e.key, e);
    if (tokenKind(e.value, e.key)) realTokens.push(e);
    // RFT611: a key copied from .env.example and never filled in reaches the host as that text, and the Hub or W&B
    // answers 401 minutes into a paid run; the empty value (RFT602) at least says nothing is there.
    if (!isExample && isSecretKey(e.key) && looksLikeExamplePlaceholder(e.value)) {
      out.push({
        ...at(e, 'value'),
        severity: 'warning',
        code: 'RFT611',
        message: `${e.key} looks like an example's placeholder, not a real ${HF_TOKENS.includes(e.key) ? 'token' : 'value'}: the run would send it and fail to authenticate. Paste the real one, or store it with Fine-Tune: Set Secret and remove the line.`,
      });
    }

    if (!isExample && HF_TOKENS.includes(e.key) && e.value.trim() === '') {
      out.push({
        ...at(e, 'key'),
        severity: 'warning',
        code: 'RFT602',
        message: `${e.key} is empty: gated models (Llama, Gemma, …) and pushes to the Hub need it. Paste a token from huggingface.co/settings/tokens or remove the line.`,
      });
    }
    if (!isExample && e.key === 'WANDB_API_KEY' && e.value.trim() === '' && ctx.wandbEnabled) {
      out.push({
        ...at(e, 'key'),
        severity: 'error',
        code: 'RFT602',
        message: 'WANDB_API_KEY is empty but the run spec reports to W&B: paste the key from wandb.ai/authorize or set wandb.enabled to false.',
      });
    }
    // An empty value is a key left blank in a template (LLaMA-Factory's .env.local lists every
    // variable it reads that way): nothing is overridden, so there is no number to check.
    const blank = e.value.trim() === '';
    if ((e.key === 'LEARNING_RATE' || e.key === 'LR') && !blank) {
      const n = Number(e.value);
      if (!Number.isFinite(n)) out.push({ ...at(e, 'value'), severity: 'error', code: 'RFT603', message: `${e.key} must be a number such as 2e-4.` });
      else if (n < 1e-6 || n > 1e-2)
        out.push({
          ...at(e, 'value'),
          severity: 'error',
          code: 'RFT603',
          message: `${e.key}=${e.value} is outside 1e-6..1e-2; use a value in that range (2e-4 is usual for LoRA).`,
          fixes: [{ title: 'Set to 2e-4', edits: [{ start: e.valueStart, end: e.valueEnd, newText: '2e-4' }] }],
        });
    }
    if (POSITIVE_INTS.includes(e.key) && !blank) {
      if (!/^\d+$/.test(e.value.trim()) || Number(e.value) < 1) {
        const fixes: Fix[] = /^-?\d+$/.test(e.value.trim()) ? [{ title: 'Set to 1', edits: [{ start: e.valueStart, end: e.valueEnd, newText: '1' }] }] : [];
        out.push({ ...at(e, 'value'), severity: 'error', code: 'RFT603', message: `${e.key} must be a positive integer (got '${e.value}').`, fixes });
      }
    }
    if (PATH_KEYS.test(e.key) && e.value.trim() !== '' && !isExample && ctx.files) {
      const v = e.value.trim();
      const looksLocal = v.startsWith('.') || v.startsWith('/') || /\.(ya?ml|json|jsonl|csv|parquet|txt|arrow)$/i.test(v);
      if (looksLocal && !v.includes('$') && !ctx.files.exists(join(dir, v))) {
        out.push({
          ...at(e, 'value'),
          severity: 'error',
          code: 'RFT604',
          message: `${e.key} points to ${v}, which does not exist (relative to this file). Fix the path or create the file.`,
        });
      }
    }
    if (e.key === 'CUDA_VISIBLE_DEVICES') {
      const v = e.value.trim();
      if (v === '' || v === '-1')
        out.push({
          ...at(e, 'key'),
          severity: 'warning',
          code: 'RFT605',
          message: 'CUDA_VISIBLE_DEVICES is empty or -1: no GPU will be visible and training falls back to CPU. Use 0, or 0,1 for two GPUs.',
        });
      else if (!/^(\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+)(,(\d+|GPU-[0-9a-fA-F-]+|MIG-[0-9a-zA-Z/-]+))*$/.test(v)) {
        out.push({
          ...at(e, 'value'),
          severity: 'error',
          code: 'RFT605',
          message: `CUDA_VISIBLE_DEVICES must be comma-separated GPU indices (0,1) or GPU-/MIG- UUIDs, without spaces; got '${v}'.`,
          fixes: /^[\d\s,]+$/.test(v)
            ? [{ title: 'Remove the spaces', edits: [{ start: e.valueStart, end: e.valueEnd, newText: v.replace(/\s+/g, '') }], preferred: true }]
            : [],
        });
      } else {
        const ids = v.split(',');
        if (new Set(ids).size !== ids.length)
          out.push({ ...at(e, 'value'), severity: 'error', code: 'RFT605', message: 'CUDA_VISIBLE_DEVICES lists the same GPU twice.' });
      }
    }
    if (e.key === 'PYTORCH_CUDA_ALLOC_CONF' || e.key === 'PYTORCH_ALLOC_CONF') {
      for (const problem of checkAllocConf(e.value)) out.push({ ...at(e, 'value'), severity: 'error', code: 'RFT606', message: `${e.key}: ${problem}` });
    }
  }

  if (!isExample && ctx.wandbEnabled && !seen.has('WANDB_API_KEY') && entries.length > 0) {
    const first = entries[0]!;
    out.push({
      start: first.keyStart,
      end: first.keyEnd,
      severity: 'warning',
      code: 'RFT602',
      message: 'The run spec reports to W&B but this .env has no WANDB_API_KEY; add it here or in the secret store (Fine-Tune: Set Secret).',
    });
  }
  if (!isExample) out.push(...endpointDiagnostics(entries));
  if (!isExample) out.push(...controlVariableDiagnostics(entries));
  if (realTokens.length > 0 && !isExample && ctx.files?.isTrackedByGit?.(ctx.fileName) === true) {
    const e = realTokens[0]!;
    out.push({
      ...at(e, 'value'),
      severity: 'warning',
      code: 'RFT607',
      message: `This .env holds a real-looking ${tokenKind(e.value, e.key)} and git tracks it: anyone with the repository can read it. Run git rm --cached ${baseName(ctx.fileName)}, add it to .gitignore and rotate the token.`,
    });
  }
  return out;
}

function checkAllocConf(v: string): string[] {
  const problems: string[] = [];
  if (v.trim() === '') return ['is empty; remove the line or set e.g. expandable_segments:True.'];
  for (const part of v.split(',')) {
    const m = /^\s*([A-Za-z0-9_]+)\s*:\s*(.+?)\s*$/.exec(part);
    if (!m) {
      problems.push(`'${part}' is not option:value (e.g. max_split_size_mb:512,expandable_segments:True).`);
      continue;
    }
    const check = ALLOC_KEYS[m[1]!];
    if (!check) {
      problems.push(`unknown option '${m[1]}'; known: ${Object.keys(ALLOC_KEYS).join(', ')}.`);
      continue;
    }
    const want = check(m[2]!);
    if (want) problems.push(`${m[1]} must be ${want} (got '${m[2]}').`);
  }
  return problems;
}

export { looksLikePlaceholder };
