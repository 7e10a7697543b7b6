// .env values that span lines (python-dotenv, docker compose and Node's dotenv ≥15 accept them):
// a PEM key or a JSON blob in quotes. Each case sits next to what must still be reported, with exact
// ranges, so accepting the multi-line form cannot loosen the single-line checks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkDotenv, parseDotenv } from '../../../src/core/config/dotenv';
import { validateText } from '../../../src/core/config/validate';
import type { ConfigDiagnostic, Fix } from '../../../src/core/config/types';

const KEY =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx+/=\n-----END OPENSSH PRIVATE KEY-----';
const codes = (text: string): string[] => checkDotenv(text, { fileName: '.env' }).map((d) => d.code);
const span = (text: string, d: ConfigDiagnostic): string => text.slice(d.start, d.end);

function applyFix(text: string, fix: Fix): string {
  let out = text;
  for (const e of [...fix.edits].sort((a, b) => b.start - a.start)) out = out.slice(0, e.start) + e.newText + out.slice(e.end);
  return out;
}

test('.env: a double-quoted private key spanning lines is one entry with its exact value, and the next line is parsed after it', () => {
  const text = `# deploy key\nPRIVATE_KEY="${KEY}"\nBATCH_SIZE=4\n`;
  const { entries, diagnostics } = parseDotenv(text);
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(
    entries.map((e) => [e.key, e.value, e.line]),
    [
      ['PRIVATE_KEY', KEY, 1],
      ['BATCH_SIZE', '4', 5],
    ],
  );
  const pk = entries[0]!;
  assert.equal(text.slice(pk.keyStart, pk.keyEnd), 'PRIVATE_KEY');
  assert.equal(text.slice(pk.valueStart, pk.valueEnd), `"${KEY}"`);
  assert.equal(text.slice(pk.lineStart, pk.lineEnd), `PRIVATE_KEY="${KEY}"\n`);
  assert.equal(text.slice(entries[1]!.lineStart, entries[1]!.lineEnd), 'BATCH_SIZE=4\n');
  assert.deepEqual(codes(text), []);
  assert.deepEqual(validateText(text, { fileName: '.env' }).diagnostics, []);
});

test('.env: single-quoted values span lines and are literal; export, an inline comment after the closing quote and EOF without a newline are fine', () => {
  const text = 'export JSON=\'{\n  "a": "$HOME",\n  "b": "\\n"\n}\'   # a comment\nLAST=\'x\ny\'';
  const { entries, diagnostics } = parseDotenv(text);
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(
    entries.map((e) => [e.key, e.value, e.line]),
    [
      ['JSON', '{\n  "a": "$HOME",\n  "b": "\\n"\n}', 0],
      ['LAST', 'x\ny', 4],
    ],
  );
  assert.equal(entries[1]!.lineEnd, text.length);
});

test('.env: double quotes read \\n \\t \\" \\\\ (python-dotenv\'s escapes); other backslashes stay; single quotes keep every backslash', () => {
  const text = 'A="l1\\nl2\\t\\"q\\" \\\\n \\$x C:\\\\dir\\\\"\nB=\'l1\\nl2 \\\\ $x\'\nC="a\\\\"\n';
  const { entries, diagnostics } = parseDotenv(text);
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(Object.fromEntries(entries.map((e) => [e.key, e.value])), {
    A: 'l1\nl2\t"q" \\n \\$x C:\\dir\\',
    B: 'l1\\nl2 \\\\ $x',
    C: 'a\\',
  });
});

test('.env: hostile multi-line values are data: a newline then `export X=…`, $(…), backticks and a lone " stay in the value and set nothing', () => {
  const hostile = 'line1\nexport PWNED=1\n$(touch /tmp/rft-pwned)\n`id`\n"\n';
  const text = `SECRET='${hostile}'\nNEXT=ok\n`;
  const { entries, diagnostics } = parseDotenv(text);
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(
    entries.map((e) => [e.key, e.value]),
    [
      ['SECRET', hostile],
      ['NEXT', 'ok'],
    ],
  );
  // The same in double quotes, with the " escaped.
  const dq = parseDotenv(`SECRET="${hostile.replace('"', '\\"')}"\n`);
  assert.deepEqual(dq.diagnostics, []);
  assert.deepEqual(
    dq.entries.map((e) => [e.key, e.value]),
    [['SECRET', hostile]],
  );
});

test('.env: CRLF files give LF inside a multi-line value, as python-dotenv reads them', () => {
  const { entries, diagnostics } = parseDotenv('K="a\r\nb"\r\nJ=\'c\r\nd\'\r\nL=1\r\n');
  assert.deepEqual(diagnostics, []);
  assert.deepEqual(
    entries.map((e) => [e.key, e.value, e.line]),
    [
      ['K', 'a\nb', 0],
      ['J', 'c\nd', 2],
      ['L', '1', 4],
    ],
  );
});

test('.env: an unclosed quote is still RFT600 at the opening quote (to the end of its line), and the lines after it are parsed', () => {
  for (const q of ['"', "'"]) {
    const text = `A=1\nPRIVATE_KEY=${q}-----BEGIN KEY-----\nabc\nBATCH_SIZE=0\n`;
    const ds = checkDotenv(text, { fileName: '.env' });
    const d = ds.find((x) => x.code === 'RFT600')!;
    assert.ok(d, JSON.stringify(ds));
    assert.equal(d.start, text.indexOf(q));
    assert.equal(span(text, d), `${q}-----BEGIN KEY-----`);
    assert.match(d.message, new RegExp(`^Unclosed ${q === '"' ? 'double' : 'single'} quote: add the closing ${q}`));
    // The following lines are entries of their own again (BATCH_SIZE=0 is still checked).
    assert.deepEqual(
      ds.map((x) => x.code),
      ['RFT600', 'RFT603'],
    );
  }
  // At the end of the file, on the last line.
  const eof = 'K="abc';
  const d = checkDotenv(eof, { fileName: '.env' })[0]!;
  assert.deepEqual([d.code, d.start, d.end], ['RFT600', 2, 6]);
});

test('.env: a quote left open above a quoted value is reported at the open quote, not swallowed into one value', () => {
  const text = 'WANDB_PROJECT="sft\nWANDB_ENTITY="team"\nLEARNING_RATE=5\n';
  const ds = checkDotenv(text, { fileName: '.env' });
  assert.deepEqual(
    ds.map((d) => [d.code, span(text, d)]),
    [
      ['RFT600', '"sft'],
      ['RFT603', '5'],
    ],
  );
  assert.match(ds[0]!.message, /Unclosed double quote: the " on line 2 is followed by more text/);
  const { entries } = parseDotenv(text);
  assert.deepEqual(
    entries.map((e) => [e.key, e.value, e.line]),
    [
      ['WANDB_PROJECT', 'sft', 0],
      ['WANDB_ENTITY', 'team', 1],
      ['LEARNING_RATE', '5', 2],
    ],
  );
});

test('.env: text after a closing quote is RFT600 on that text (python-dotenv skips such a line); a comment after it is not', () => {
  const text = 'A="x" y\nB=\'it\\\'s\'\nC="ok" # fine\nD="ok"#fine\n';
  const ds = checkDotenv(text, { fileName: '.env' });
  assert.deepEqual(
    ds.map((d) => [d.code, span(text, d)]),
    [
      ['RFT600', 'y'],
      ['RFT600', "s'"],
    ],
  );
  assert.match(ds[0]!.message, /Text after the closing " of A/);
});

test('.env: single-line diagnostics keep their ranges (not KEY=value, bad name, duplicates with their fix, numbers)', () => {
  const text = 'HF_TOKEN hf_abc\n1BAD=x\nBATCH_SIZE=0\nBATCH_SIZE=2\nLEARNING_RATE=0.5\nCUDA_VISIBLE_DEVICES=0, 1\n';
  const ds = checkDotenv(text, { fileName: '.env' });
  assert.deepEqual(
    ds.map((d) => [d.code, span(text, d)]),
    [
      ['RFT600', 'HF_TOKEN hf_abc'],
      ['RFT600', '1BAD'],
      ['RFT603', '0'],
      ['RFT601', 'BATCH_SIZE'],
      ['RFT603', '0.5'],
      ['RFT605', '0, 1'],
    ],
  );
  const dup = ds.find((d) => d.code === 'RFT601')!;
  assert.equal(applyFix(text, dup.fixes![0]!), text.replace('BATCH_SIZE=0\n', ''));
});

test('.env: a duplicate of a multi-line entry is removed whole by the RFT601 fix; checks after it point at the right lines', () => {
  const text = `PRIVATE_KEY="${KEY}"\nPRIVATE_KEY='other'\nGRAD_ACCUM=-1\n`;
  const ds = checkDotenv(text, { fileName: '.env' });
  assert.deepEqual(
    ds.map((d) => [d.code, span(text, d)]),
    [
      ['RFT601', 'PRIVATE_KEY'],
      ['RFT603', '-1'],
    ],
  );
  assert.equal(ds[0]!.message, 'PRIVATE_KEY is set twice (first on line 1); the last one wins. Remove one of them.');
  assert.equal(ds[0]!.start, text.indexOf("PRIVATE_KEY='"));
  assert.equal(applyFix(text, ds[0]!.fixes![0]!), "PRIVATE_KEY='other'\nGRAD_ACCUM=-1\n");
  const li = text.slice(0, ds[1]!.start).split('\n').length;
  assert.equal(li, 6, 'GRAD_ACCUM is on line 6, after the four lines of the key and the duplicate');
});

test('W&B sweep: impute_while_running: false (a YAML boolean) says to write it as a string, and the fix quotes it', () => {
  const text =
    'program: train.py\nmethod: bayes\nmetric:\n  name: loss\n  goal: minimize\n  impute_while_running: false\nparameters:\n  lr:\n    min: 0.0001\n    max: 0.1\n';
  const ds = validateText(text, { fileName: 'sweep.yaml' }).diagnostics;
  assert.deepEqual(
    ds.map((d) => d.code),
    ['RFT504'],
  );
  const d = ds[0]!;
  assert.equal(span(text, d), 'false');
  assert.match(d.message, /write it as a string: 'false'/);
  assert.doesNotMatch(d.message, /Did you mean/);
  const fixed = applyFix(
    text,
    d.fixes!.find((f) => f.preferred)!,
  );
  assert.match(fixed, /impute_while_running: "false"\n/);
  assert.deepEqual(validateText(fixed, { fileName: 'sweep.yaml' }).diagnostics, []);
  // A real typo still gets its suggestion.
  const typo = validateText(text.replace('impute_while_running: false', 'impute_while_running: latst'), { fileName: 'sweep.yaml' }).diagnostics;
  assert.match(typo[0]!.message, /Did you mean 'latest'\?/);
});
