// Moves TypeScript modules and rewrites every reference to them, so a rename is one reviewed command:
//   node scripts/move-modules.mjs src/a/old.ts=src/b/new.ts [old=new …]
// It `git mv`s each file, then in every tracked or new file rewrites
//   - relative import/export/require/import() specifiers that resolve to a moved file (and, in a moved file,
//     its own relative specifiers, which now start from another folder), keeping each specifier's style
//     (with or without the extension);
//   - repository paths in text (`src/a/old.ts`, also written without `src/`) in code, docs and the runner.
// The same rewrite is applied to the staged copy of each tracked file, so `git commit` of the move holds the
// reference changes and nothing else a colleague has not staged.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { posix } from 'node:path';

const git = (...args) => execFileSync('git', args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
const moves = new Map(
  process.argv.slice(2).map((a) => {
    const [from, to] = a.split('=');
    if (!from || !to || !/\.tsx?$/.test(from) || !/\.tsx?$/.test(to)) throw new Error(`expected old.ts=new.ts, got ${a}`);
    return [posix.normalize(from), posix.normalize(to)];
  }),
);
if (moves.size === 0) {
  console.error('usage: node scripts/move-modules.mjs <old.ts>=<new.ts> …');
  process.exit(2);
}
const movedFrom = new Map([...moves].map(([a, b]) => [b, a]));

const CODE = /\.(ts|tsx|mts|mjs|js|cjs)$/;
const TEXT = /\.(ts|tsx|mts|mjs|js|cjs|json|md|py|sh|ya?ml|toml)$/;
const tracked = new Set(git('ls-files', '-z').split('\0').filter(Boolean));
const untracked = git('ls-files', '-z', '--others', '--exclude-standard').split('\0').filter(Boolean);

for (const [from, to] of moves) {
  if (!tracked.has(from)) throw new Error(`${from} is not tracked`);
  if (existsSync(to)) throw new Error(`${to} exists`);
  mkdirSync(posix.dirname(to), { recursive: true });
  git('mv', from, to);
}

const files = [...tracked]
  .map((f) => moves.get(f) ?? f)
  .concat(untracked)
  .filter((f) => TEXT.test(f) && !f.startsWith('node_modules/') && existsSync(f));

/** The repository path a relative specifier of `fromFile` names, if it names a file we know. */
function resolve(fromFile, spec) {
  const base = posix.normalize(posix.join(posix.dirname(fromFile), spec));
  for (const c of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`]) if (tracked.has(c) || moves.has(c)) return c;
  return undefined;
}

function rewriteSpecifiers(text, file) {
  const oldFile = movedFrom.get(file) ?? file;
  return text.replace(/(\bfrom\s+|\bimport\s*\(\s*|\brequire\s*\(\s*|\bimport\s+|\bmodule\s*\(\s*)(['"])(\.\.?\/[^'"\n]*)\2/g, (all, lead, q, spec) => {
    const target = resolve(oldFile, spec);
    if (!target) return all;
    const moved = moves.get(target) ?? target;
    if (moved === target && oldFile === file) return all;
    const withExt = /\.[cm]?[jt]sx?$/.test(spec);
    let rel = posix.relative(posix.dirname(file), withExt ? moved : moved.replace(/(\/index)?\.tsx?$/, ''));
    if (!rel.startsWith('.')) rel = `./${rel}`;
    return `${lead}${q}${rel}${q}`;
  });
}

function rewritePaths(text) {
  let out = text;
  for (const [from, to] of moves) {
    const pairs = [
      [from, to],
      [from.replace(/^src\//, ''), to.replace(/^src\//, '')],
    ];
    for (const [a, b] of pairs) out = out.replace(new RegExp(`(^|[^\\w/.-])${a.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w])`, 'g'), `$1${b}`);
  }
  return out;
}

const rewrite = (text, file) => rewritePaths(CODE.test(file) ? rewriteSpecifiers(text, file) : text);

let changed = 0;
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const next = rewrite(text, file);
  if (next !== text) {
    writeFileSync(file, next);
    changed++;
  }
  // The staged copy gets the same rewrite, so committing the move commits only it.
  if (!tracked.has(movedFrom.get(file) ?? file)) continue;
  let staged;
  try {
    staged = git('show', `:${file}`);
  } catch {
    continue;
  }
  const stagedNext = rewrite(staged, file);
  if (stagedNext === staged) continue;
  const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], { input: stagedNext, encoding: 'utf8' }).trim();
  const mode = git('ls-files', '-s', '--', file).split(' ')[0];
  git('update-index', '--cacheinfo', `${mode},${blob},${file}`);
}
console.log(`moved ${moves.size} file(s); rewrote references in ${changed} file(s)`);
