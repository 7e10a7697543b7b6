// What each failed suite said about its failures, in a few lines per test, printed at the end of `npm test`: CI
// keeps only the tail of a run's output, and a list of failing test names without their errors cannot be acted on.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const STACK = /^\s+at\s/;
const MAX_LINE = 300;
const clip = (line) => (line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line);

/**
 * Each "✖ name" line with the first lines of its error: from node:test's "failing tests" section where there is one,
 * else from the whole log (the VS Code host suite prints its failures inline, mocha-style).
 */
function markedFailures(text, perTest) {
  const at = text.lastIndexOf('✖ failing tests:');
  const from = at < 0 ? text : text.slice(at).split('\n').slice(1).join('\n');
  const out = [];
  let kept = perTest;
  for (const line of from.split('\n')) {
    if (/^temporary files of this run kept in /.test(line)) break;
    if (!line.trim() || STACK.test(line) || /^test at /.test(line)) continue;
    if (/^\s*✖ /.test(line) && !/^\s*✖ failing tests:/.test(line)) {
      out.push(clip(line.trim()));
      kept = 0;
    } else if (!/^\s/.test(line) || /^\s*✔ /.test(line)) {
      kept = perTest; // the error's lines are indented under its test; anything else ends it
    } else if (kept < perTest) {
      out.push(clip(`    ${line.trim()}`));
      kept++;
    }
  }
  return out;
}

/** unittest: each FAIL/ERROR heading with its exception line (of the last traceback, when chained) and the message's last line. */
function unittestFailures(text) {
  const out = [];
  const blocks = text.split(/^={50,}$/m).slice(1);
  for (const block of blocks) {
    const head = /^(FAIL|ERROR): .*$/m.exec(block);
    if (!head) continue;
    const body = block.split(/^-{50,}$/m)[1] ?? '';
    const lastTrace = body.slice(Math.max(0, body.lastIndexOf('Traceback (most recent call last):')));
    const lines = lastTrace.split('\n').map((l) => l.trimEnd());
    const exception = lines.findIndex((l, i) => i > 0 && l && !/^\s/.test(l));
    out.push(clip(`✖ ${head[0]}`));
    if (exception < 0) continue;
    out.push(clip(`    ${lines[exception]}`));
    const last = lines.filter(Boolean).pop();
    if (last && last !== lines[exception]) out.push(clip(`    … ${last.trim()}`));
  }
  return out;
}

/** The failures one suite's log reports, at most `maxLines` lines. */
export function failureDigest(text, { perTest = 3, maxLines = 40 } = {}) {
  const lines = [...markedFailures(text, perTest), ...unittestFailures(text)];
  // The training suite keeps only unittest's FAIL/ERROR headings in its log.
  if (lines.length === 0)
    lines.push(
      ...text
        .split('\n')
        .filter((l) => /^\s*(FAIL|ERROR): /.test(l))
        .map((l) => clip(`✖ ${l.trim()}`)),
    );
  if (lines.length <= maxLines) return lines;
  return [...lines.slice(0, maxLines), `… and ${lines.length - maxLines} more lines in the suite's log`];
}

function main(dir, failed) {
  for (const suite of failed) {
    const file = join(dir, `${suite.replace(/:/g, '_')}.log`);
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    const lines = failureDigest(text);
    console.log(`-- ${suite}: ${lines.length ? 'what failed' : 'no failing test named in its log; its last lines'} --`);
    for (const l of lines.length ? lines : text.trimEnd().split('\n').slice(-8).map(clip)) console.log(l);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [dir, ...failed] = process.argv.slice(2);
  if (!dir) {
    console.error('usage: node scripts/test-failures.mjs <suite log folder> <failed suite>...');
    process.exit(2);
  }
  main(dir, failed.length ? failed : readdirSync(dir).map((f) => f.replace(/\.log$/, '')));
}
