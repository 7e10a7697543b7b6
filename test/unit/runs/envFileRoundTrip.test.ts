// The run's env file, end to end: .env text → collectEnv → renderEnvFile → read back on the host both
// ways it is read there (the wrapper's `set -a; . ./env` in /bin/sh, and the python runner's
// envfile.read_env_file). Every value must come back byte-exact and nothing in it may be interpreted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { collectEnv } from '../../../src/core/runs/lifecycle/runPlan';
import { parseDotenv } from '../../../src/core/config/dotenv';
import { invalidEnvNames, renderEnvFile } from '../../../src/core/ssh/envFile';
import { WRAPPER_SCRIPT } from '../../../src/core/ssh/detachedJob';

const RUNNER = resolve(__dirname, '../../../python-runner');
const PEM =
  '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx+/=\n-----END OPENSSH PRIVATE KEY-----';

/** Values meant to break out of the file: each must arrive as plain data. `dir` is where a break-out would leave a file. */
function hostile(dir: string): Record<string, string> {
  return {
    RFT_T_NEWLINE_EXPORT: `line1\nexport PWNED=1\nPWNED2=2 ; touch ${dir}/pwned-nl\n`,
    RFT_T_SUBST: `$(touch ${dir}/pwned-subst)`,
    RFT_T_BACKTICK: `\`touch ${dir}/pwned-tick\``,
    RFT_T_LONE_DQ: '"',
    RFT_T_LONE_SQ: "'",
    RFT_T_SQ_BREAKOUT: `'; touch ${dir}/pwned-sq; echo '`,
    RFT_T_MIXED: 'it\'s "quoted" \\ back\\slash \\n \\\' $HOME ${HOME} #not-a-comment a=b',
    RFT_T_EDGES: '\n\n  spaced\tand tabbed  \n\n',
    RFT_T_CR: '\r\nCRLF\r lone CR\r',
    RFT_T_UNICODE: 'ключ — 🔑 \u2028 sep',
    RFT_T_EMPTY: '',
    RFT_T_PEM: PEM,
  };
}

function envFileIn(dir: string, env: Record<string, string>): string {
  const path = join(dir, 'env');
  writeFileSync(path, renderEnvFile(env), { mode: 0o600 });
  return path;
}

/** What a shell sees after the wrapper's own sourcing line (the wrapper runs under /bin/sh), as JSON from a child process. */
function sourcedByShell(dir: string, shell = '/bin/sh'): Record<string, string> {
  const line = WRAPPER_SCRIPT.split('\n').find((l) => l.includes('. ./env'));
  assert.ok(line, 'the wrapper sources ./env');
  const dump =
    'process.stdout.write(JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("RFT_T_") || k.startsWith("PWNED")))))';
  // stdin closed: bash on a socket stdin (libuv's pipes) takes itself for rshd's child and reads ~/.bashrc.
  const r = spawnSync(shell, ['-c', `${line}\nexec "$0" -e "$1"`, process.execPath, dump], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  return JSON.parse(r.stdout) as Record<string, string>;
}

function pythonAvailable(): boolean {
  return spawnSync('python3', ['-c', 'pass']).status === 0;
}

/** What the python runner reads from the same file. */
function readByRunner(path: string): [Record<string, string>, string[]] {
  const code = 'import json, sys\nfrom remote_finetune.envfile import read_env_file\nsys.stdout.write(json.dumps(read_env_file(sys.argv[1])))';
  const r = spawnSync('python3', ['-c', code, path], { env: { ...process.env, PYTHONPATH: RUNNER }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as [Record<string, string>, string[]];
}

test('collectEnv: a multi-line quoted .env value arrives whole, with the entries after it; the store still wins', () => {
  const text = `# keys\nSSH_KEY="${PEM}"\nJSON='{\n  "a": "$HOME"\n}'\nESCAPED="a\\nb \\"q\\" \\\\"\nHF_TOKEN=from-file\nBATCH_SIZE=4 # comment\n`;
  const env = collectEnv(text, { HF_TOKEN: 'from-store', WANDB_API_KEY: undefined });
  assert.deepEqual(env, { SSH_KEY: PEM, JSON: '{\n  "a": "$HOME"\n}', ESCAPED: 'a\nb "q" \\', HF_TOKEN: 'from-store', BATCH_SIZE: '4' });
});

test('collectEnv: hostile values written in a .env (single-quoted, spanning lines) come out as data, byte-exact', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rft-envrt-'));
  const want = hostile(dir);
  // Everything except a single quote can be written inside '…' in a .env; the lone-' and break-out values come from the secret store.
  const fromFile = Object.entries(want).filter(([, v]) => !v.includes("'") && !v.includes('\r'));
  const text = fromFile.map(([k, v]) => `${k}='${v}'\n`).join('') + 'AFTER=1\n';
  const env = collectEnv(text, {});
  assert.equal(env.PWNED, undefined);
  assert.equal(env.PWNED2, undefined);
  assert.deepEqual(env, { ...Object.fromEntries(fromFile), AFTER: '1' });
});

for (const shell of ['/bin/sh', '/bin/dash', '/bin/bash']) {
  test(
    `env file: the wrapper's \`set -a; . ./env\` in ${shell} reads every hostile value back byte-exact and runs none of it`,
    { skip: existsSync(shell) ? false : `${shell} is not installed` },
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'rft-envrt-'));
      const want = hostile(dir);
      envFileIn(dir, want);
      const got = sourcedByShell(dir, shell);
      assert.deepEqual(got, want, 'no PWNED variable, every value exact');
      assert.deepEqual(readdirSync(dir).sort(), ['env'], 'no command in a value ran');
    },
  );
}

test(
  'env file: the python runner reads the same file back byte-exact, as the shell does',
  { skip: !existsSync('/bin/sh') ? '/bin/sh is not installed' : !pythonAvailable() && 'python3 not found' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-envrt-'));
    const want = { ...hostile(dir), HF_TOKEN: 'hf_abcdefghijklmnopqrstuvwxyz', BATCH_SIZE: '4' };
    const path = envFileIn(dir, want);
    const [env, problems] = readByRunner(path);
    assert.deepEqual(problems, []);
    assert.deepEqual(env, want);
    assert.deepEqual(sourcedByShell(dir), Object.fromEntries(Object.entries(want).filter(([k]) => k.startsWith('RFT_T_'))));
    assert.ok(!existsSync(join(dir, 'pwned-subst')));
  },
);

test(
  'env file: .env → collectEnv → env file → shell and runner, for a private key and an escaped double-quoted value',
  { skip: !existsSync('/bin/sh') ? '/bin/sh is not installed' : !pythonAvailable() && 'python3 not found' },
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'rft-envrt-'));
    const env = collectEnv(`RFT_T_KEY="${PEM}\n"\nRFT_T_DQ="tab\\there \\"x\\" \\$(id) \`id\`"\n`, { RFT_T_STORE: "it's\nmulti-line" });
    assert.deepEqual(env, { RFT_T_KEY: `${PEM}\n`, RFT_T_DQ: 'tab\there "x" \\$(id) `id`', RFT_T_STORE: "it's\nmulti-line" });
    const path = envFileIn(dir, env);
    assert.deepEqual(sourcedByShell(dir), env);
    assert.deepEqual(readByRunner(path), [env, []]);
  },
);

test('a dotted .env name is flagged (RFT608) and left out of the run environment instead of failing the run', () => {
  const text = 'HF_TOKEN=hf_abc\nmodel.name=llama\n';
  const d = parseDotenv(text).diagnostics;
  const w = d.find((x) => x.code === 'RFT608');
  assert.ok(w && w.severity === 'warning', JSON.stringify(d));
  assert.equal(text.slice(w.start, w.end), 'model.name');
  const env = collectEnv(text, {});
  assert.deepEqual(Object.keys(env), ['HF_TOKEN']);
  assert.deepEqual(invalidEnvNames(env), []);
});
