// The latest verdict line of each benchmark, kept in bench/results/latest.jsonl (one line per bench, sorted),
// and the README table made from them by scripts/bench-readme.ts: figures in the README are never typed by
// hand. A verdict line must carry the fields below and agree with itself (ratio = ours / reference, pass = every
// goal met); one that does not is refused, not rendered.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { meets } from './pairs';

export const RESULTS_FILE = 'bench/results/latest.jsonl';
const REQUIRED = ['bench', 'metric', 'ours', 'reference', 'ratio', 'goal', 'pass', 'date'] as const;

export interface VerdictLine {
  readonly bench: string;
  readonly metric: string;
  readonly ours: number;
  readonly reference: number;
  readonly ratio: number;
  readonly goal: string;
  readonly pass: boolean;
  readonly date: string;
  readonly checks?: ReadonlyArray<{ name: string; value: number; goal: string; pass: boolean }>;
  readonly cipher?: string;
  readonly link?: string;
  readonly samples?: { readonly ours: readonly number[]; readonly reference: readonly number[] };
  readonly covers?: readonly string[];
  readonly commit?: string;
  readonly dirty?: boolean;
  readonly reference_command?: string;
  readonly [k: string]: unknown;
}

/** ours / reference agree with ratio to the 4 decimals verdicts are written with. */
const RATIO_TOLERANCE = 1e-4;

/** Parses one verdict line; throws naming what is missing or wrong. */
export function parseVerdict(line: string): VerdictLine {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    throw new Error(`not a JSON verdict line: ${line.slice(0, 120)}`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('a verdict line must be a JSON object');
  const o = v as Record<string, unknown>;
  const missing = REQUIRED.filter((k) => o[k] === undefined);
  if (missing.length > 0) throw new Error(`verdict of ${String(o.bench ?? '?')} lacks ${missing.join(', ')}`);
  for (const k of ['ours', 'reference', 'ratio'] as const)
    if (typeof o[k] !== 'number' || !Number.isFinite(o[k])) throw new Error(`verdict of ${String(o.bench)}: ${k} is not a finite number`);
  if (typeof o.pass !== 'boolean') throw new Error(`verdict of ${String(o.bench)}: pass is not true/false`);
  const parsed = o as unknown as VerdictLine;
  checkConsistent(parsed);
  return parsed;
}

/** Throws unless ratio = ours / reference and pass = every goal met, as printVerdict writes them. */
function checkConsistent(v: VerdictLine): void {
  const ratio = v.ours / v.reference;
  if (Math.abs(ratio - v.ratio) > RATIO_TOLERANCE * Math.max(1, Math.abs(ratio)))
    throw new Error(`verdict of ${v.bench}: ratio ${v.ratio} is not ours / reference (${ratio.toFixed(4)})`);
  for (const c of v.checks ?? [])
    if (meets(c.value, c.goal) !== c.pass)
      throw new Error(`verdict of ${v.bench}: check "${c.name}" says pass ${c.pass} but ${c.value} ${c.goal} is ${!c.pass}`);
  const pass = meets(v.ratio, v.goal) && (v.checks ?? []).every((c) => c.pass);
  if (pass !== v.pass) throw new Error(`verdict of ${v.bench}: pass is ${v.pass} but ratio ${v.ratio} against ${v.goal} and its checks give ${pass}`);
}

/**
 * What a verdict must also carry to be judged: every pair's values (so the spread can be read), the reference's
 * command line, the code it covers and the commit it measured. Returns the problems, none when complete.
 */
export function incompleteness(v: VerdictLine): string[] {
  const problems: string[] = [];
  const s = v.samples;
  if (!s || !Array.isArray(s.ours) || !Array.isArray(s.reference) || s.ours.length === 0 || s.ours.length !== s.reference.length)
    problems.push('no per-pair samples of both sides');
  if (!v.reference_command) problems.push('no reference command line');
  if (!Array.isArray(v.covers) || v.covers.length === 0) problems.push('no covered code');
  if (!v.commit || !/^[0-9a-f]{40}$/.test(v.commit)) problems.push('no commit');
  return problems;
}

/** Each pair's ours / reference, for the spread of the ratio. */
export function pairRatios(v: VerdictLine): number[] {
  const s = v.samples;
  if (!s) return [];
  return s.ours.map((o, i) => o / s.reference[i]!);
}

/**
 * Verdicts whose figure no longer describes the code: measured on uncommitted changes, at a commit this
 * history lacks, or with a covered path changed since. bench name → why.
 */
export function staleVerdicts(results: readonly VerdictLine[], repo = '.'): Map<string, string> {
  const git = (args: string[]): string => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  const out = new Map<string, string>();
  for (const v of results) {
    if (!v.commit || !Array.isArray(v.covers) || v.covers.length === 0) {
      out.set(v.bench, 'no commit or covered code recorded');
      continue;
    }
    if (v.dirty) {
      out.set(v.bench, `measured on uncommitted changes to ${v.covers.join(', ')}`);
      continue;
    }
    try {
      git(['cat-file', '-e', `${v.commit}^{commit}`]);
    } catch {
      out.set(v.bench, `commit ${v.commit.slice(0, 10)} is not in this history`);
      continue;
    }
    const later = git(['log', '--format=%h %cs', `${v.commit}..HEAD`, '--', ...v.covers]);
    if (later !== '') {
      const commits = later.split('\n');
      out.set(v.bench, `${commits.length} later commit(s) changed ${v.covers.join(', ')} (newest ${commits[0]})`);
    }
  }
  return out;
}

export function readResults(path = RESULTS_FILE): VerdictLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(parseVerdict);
}

/** Replaces (or adds) the bench's line in the results file. */
export function recordVerdict(v: VerdictLine, path = RESULTS_FILE): void {
  const rest = readResults(path).filter((x) => x.bench !== v.bench);
  const all = [...rest, v].sort((a, b) => a.bench.localeCompare(b.bench));
  writeFileSync(path, all.map((x) => JSON.stringify(x)).join('\n') + '\n');
}

function fmt(n: number): string {
  return Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(3);
}

/**
 * The README table: one row per bench, its goals (the ratio's and every check's) and whether each was met, the
 * spread of the per-pair ratios, the date and commit measured, and a mark on verdicts `stale` names.
 */
export function renderTable(results: readonly VerdictLine[], stale: ReadonlyMap<string, string> = new Map()): string {
  const rows = [
    '| bench | measures | ours | reference | ratio | pair ratios min–max (pairs) | goal | other goals | pass | cipher / link | measured |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const v of results) {
    const checks = (v.checks ?? []).map((c) => `${c.name}: ${fmt(c.value)} (${c.goal}) ${c.pass ? 'met' : 'missed'}`).join('; ') || '–';
    const where = [v.cipher, v.link].filter(Boolean).join(', ') || '–';
    const r = pairRatios(v);
    const spread = r.length > 0 ? `${Math.min(...r).toFixed(2)}–${Math.max(...r).toFixed(2)} (${r.length})` : '–';
    const when = `${v.date}${v.commit ? ` at ${v.commit.slice(0, 7)}` : ''}${stale.has(v.bench) ? ' · **stale**' : ''}`;
    rows.push(
      `| ${v.bench} | ${v.metric} | ${fmt(v.ours)} | ${fmt(v.reference)} | **${v.ratio.toFixed(2)}** | ${spread} | ${v.goal} | ${checks} | ${v.pass ? 'yes' : '**no**'} | ${where} | ${when} |`,
    );
  }
  return rows.join('\n');
}

export const BEGIN = '<!-- bench:begin (generated by npm run bench:readme from bench/results/latest.jsonl; do not edit) -->';
export const END = '<!-- bench:end -->';

/** `readme` with the text between the markers replaced by the table; throws when the markers are missing. */
export function withTable(readme: string, table: string): string {
  const a = readme.indexOf(BEGIN);
  const b = readme.indexOf(END);
  if (a < 0 || b < a) throw new Error('README.md has no bench:begin/bench:end markers');
  return `${readme.slice(0, a + BEGIN.length)}\n${table}\n${readme.slice(b)}`;
}
