// `python -m remote_finetune publish` with the real huggingface_hub (both runner locks' venvs) against the Hub
// emulator (test/emulators/hfHub.ts, a stand-in for huggingface.co's upload API, named as such) over loopback
// via HF_ENDPOINT: the files land, the repo is private unless asked, the weights go through LFS, the card is
// written from the run's record, and the Hub's awkward answers (401, 409, a public repo in the way) are met.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, copyFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { HfHubEmulator, LFS_THRESHOLD } from '../../emulators/hfHub';
import { trainingPython } from '../../harness/trainingVenv';
import { REPO_ROOT } from '../../harness/codeServer';

const TOKEN = 'hf_' + 'a'.repeat(34);
const RUNNER = join(REPO_ROOT, 'python-runner');

interface Fixture {
  readonly ws: string;
  readonly run_dir: string;
  readonly model_dir: string;
}

interface Published {
  readonly code: number | null;
  readonly lines: Array<Record<string, unknown>>;
  readonly stderr: string;
}

/** Runs the runner's publish as the host would, asynchronously: the emulator answers from this same process. */
async function publish(
  python: string,
  hub: HfHubEmulator,
  fx: Fixture,
  args: readonly string[],
  stdin: unknown,
  env: Readonly<Record<string, string>> = {},
): Promise<Published> {
  const child = spawn(python, ['-m', 'remote_finetune', 'publish', '--run-dir', fx.run_dir, '--workdir', fx.ws, ...args], {
    cwd: fx.run_dir,
    env: {
      ...process.env,
      PYTHONPATH: RUNNER,
      PYTHONSAFEPATH: '1',
      HF_ENDPOINT: hub.url,
      HF_HUB_DISABLE_XET: '1',
      HF_HUB_DISABLE_TELEMETRY: '1',
      HF_TOKEN: '',
      ...env,
    },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  child.stdin.end(JSON.stringify(stdin));
  const timer = setTimeout(() => child.kill('SIGKILL'), 180_000);
  const code = await new Promise<number | null>((r) => child.once('close', (c) => r(c)));
  clearTimeout(timer);
  // Every stdout line is one JSON object: the extension reads nothing else.
  const lines = stdout
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, lines, stderr };
}

for (const lock of ['hf5-torch2.6plus', 'hf4-torch2.2to2.5']) {
  describe(`publish to the Hub emulator (huggingface_hub of the ${lock} venv)`, () => {
    let python: string;
    let hub: HfHubEmulator;
    let root: string;
    let fx: Fixture;

    before(async () => {
      python = trainingPython(lock);
      hub = await new HfHubEmulator({ [TOKEN]: 'alice' }).start();
      root = mkdtempSync(join(tmpdir(), 'rft-hub-'));
      // The spec names a Hub model (as a real run's does), so the card can name its base model.
      const out = execFileSync(python, ['-m', 'tests_training.merge_fixture', root, 'meta-llama/Llama-3.2-1B'], {
        cwd: RUNNER,
        env: { ...process.env, HF_HUB_OFFLINE: '1' },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      fx = JSON.parse(out.trim().split('\n').pop()!) as Fixture;
    });

    after(async () => {
      await hub.stop();
      rmSync(root, { recursive: true, force: true });
    });

    test('an adapter goes to a private repo, its weights through LFS, with a card from the run', async () => {
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', 'tiny-lora'], {
        token: TOKEN,
        facts: { run_name: 'tiny | run', gpu: 'A100-40GB' },
      });
      assert.equal(r.code, 0, r.stderr.slice(-3000));
      const stages = r.lines.map((l) => l.stage);
      assert.deepEqual(stages.slice(0, 2), ['checking-token', 'creating-repo']);
      assert.ok(stages.filter((s) => s === 'uploading').length >= 3, `one progress line per file: ${stages.join(',')}`);
      assert.deepEqual(stages.slice(-2), ['committing', 'done']);
      const done = r.lines.at(-1)!;
      assert.equal(done.repo, 'alice/tiny-lora');
      assert.equal(done.private, true);

      const repo = hub.repos.get('alice/tiny-lora');
      assert.ok(repo, 'the repo exists on the Hub');
      assert.equal(repo.private, true, 'private by default');
      const files = [...repo.files.keys()].sort();
      for (const f of ['README.md', 'adapter_config.json', 'adapter_model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
        assert.ok(files.includes(f), `${f} in ${files.join(', ')}`);
      assert.equal(repo.files.get('adapter_model.safetensors')!.lfs, true, 'safetensors go through LFS');
      assert.equal(repo.files.get('adapter_config.json')!.lfs, false);
      const local = readdirSync(join(fx.ws, 'outputs/adapter'));
      assert.deepEqual(
        repo.files.get('adapter_model.safetensors')!.content,
        execFileSync('cat', [join(fx.ws, 'outputs/adapter/adapter_model.safetensors')]),
        `the weights arrive byte for byte (${local.join(', ')})`,
      );
      assert.equal(repo.commits.length, 1, 'one commit');

      const card = repo.files.get('README.md')!.content.toString('utf8');
      const meta = parseYaml(/^---\n([\s\S]*?)\n---/.exec(card)![1]!) as Record<string, unknown>;
      assert.equal(meta.base_model, 'meta-llama/Llama-3.2-1B');
      assert.equal(meta.library_name, 'peft');
      assert.ok(Array.isArray(meta.tags) && meta.tags.includes('lora') && meta.tags.includes('remote-finetune'), String(meta.tags));
      assert.equal(meta.license, undefined, 'no license when none is known');
      assert.match(card, /\| LoRA r \/ alpha \/ dropout \| 8 \/ 16 \/ 0\.0 \|/);
      assert.match(card, /\| Learning rate \| 0\.005 \|/);
      assert.match(card, /\| Final training loss \| 2\.1250 \|/);
      assert.match(card, /\| Final eval loss \| 2\.5000 \|/);
      assert.match(card, /\| GPU \| A100-40GB \|/);
      assert.match(card, /\| Training time \| 12m 34s \|/);
      assert.match(card, /run "tiny \\\| run"/, 'the run name is text in the card, its pipe escaped');
      assert.ok(!card.includes(root), 'no local path of the host in the card');
      assert.ok(
        [...hub.authSeen].every((h) => h === `Bearer ${TOKEN}`),
        'only the given token reached the Hub',
      );
    });

    test('pushing the same adapter again copes with the 409, and what the Hub has is not sent again', async () => {
      const before = hub.calls.filter((c) => c.startsWith('PUT /lfs-upload/')).length;
      const conflicts = hub.conflicts;
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', 'alice/tiny-lora'], { token: TOKEN });
      assert.equal(r.code, 0, r.stderr.slice(-3000));
      assert.equal(hub.conflicts, conflicts + 1, 'create_repo was answered 409');
      assert.equal(r.lines.at(-1)!.repo, 'alice/tiny-lora');
      assert.equal(hub.calls.filter((c) => c.startsWith('PUT /lfs-upload/')).length, before, 'LFS objects the Hub has are not sent twice');
    });

    test('a bad token is refused with the Hub 401 and nothing is created', async () => {
      const repos = hub.repos.size;
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', 'other'], { token: 'hf_' + 'b'.repeat(34) });
      assert.equal(r.code, 1);
      assert.equal(r.lines.at(-1)!.stage, 'error');
      assert.match(String(r.lines.at(-1)!.message), /refused the token \(401\)/);
      assert.equal(hub.repos.size, repos);
      assert.ok(!r.stderr.includes('b'.repeat(34)) && !JSON.stringify(r.lines).includes('b'.repeat(34)), 'the token is not echoed');
    });

    test('no token on stdin is an error, whatever HF_TOKEN the host has', async () => {
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', 'x'], {}, { HF_TOKEN: TOKEN });
      assert.equal(r.code, 1);
      assert.match(String(r.lines.at(-1)!.message), /no Hugging Face token on stdin/);
      assert.ok(!hub.repos.has('alice/x'));
    });

    test('a private push into an existing public repo is refused before anything uploads', async () => {
      const pub = hub.addRepo('alice/already-public', false);
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', 'already-public'], { token: TOKEN });
      assert.equal(r.code, 1);
      assert.match(String(r.lines.at(-1)!.message), /already exists and is public/);
      assert.equal(pub.commits.length, 0);
      assert.deepEqual([...pub.files.keys()], ['.gitattributes']);
    });

    test('public only when asked', async () => {
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', 'tiny-public', '--public'], { token: TOKEN });
      assert.equal(r.code, 0, r.stderr.slice(-3000));
      assert.equal(hub.repos.get('alice/tiny-public')!.private, false);
    });

    test('a text file over the 10 MB threshold goes through LFS; links and hidden files stay behind', async () => {
      const dir = join(fx.ws, `outputs/big-${lock}`);
      mkdirSync(dir, { recursive: true });
      for (const f of ['adapter_config.json', 'adapter_model.safetensors']) copyFileSync(join(fx.ws, 'outputs/adapter', f), join(dir, f));
      writeFileSync(join(dir, 'notes.txt'), 'a long training log line\n'.repeat(Math.ceil((LFS_THRESHOLD + 1000) / 25)));
      writeFileSync(join(dir, '.hidden'), 'secret');
      execFileSync('ln', ['-s', '/etc/passwd', join(dir, 'passwd')]);
      const r = await publish(python, hub, fx, ['--what', 'adapter', '--repo', `big-${lock.slice(0, 3)}`, '--path', `outputs/big-${lock}`], { token: TOKEN });
      assert.equal(r.code, 0, r.stderr.slice(-3000));
      const repo = hub.repos.get(`alice/big-${lock.slice(0, 3)}`)!;
      assert.equal(repo.files.get('notes.txt')!.lfs, true, 'over the threshold: LFS');
      assert.ok(repo.files.get('notes.txt')!.content.length > LFS_THRESHOLD);
      assert.ok(!repo.files.has('passwd') && !repo.files.has('.hidden'), [...repo.files.keys()].join(', '));
    });
  });
}
