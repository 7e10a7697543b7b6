// Merge Adapter and Push to Hugging Face Hub on a run's host, over SSH to a real OpenSSH server on loopback:
// a run trains a LoRA adapter there with the real peft (a tiny Llama built here, an own script), then the
// extension-side core (adapterMerge.ts, hubPublish.ts through RunManager.onRunHost) merges it on the host with
// the real runner, reporting progress, and pushes the merged model to the Hub emulator (test/emulators/hfHub.ts,
// a stand-in for huggingface.co's upload API) via HF_ENDPOINT. Checked: the merged logits equal base+adapter,
// the repo is private with the files and a card, and the token never appears in a process's argv on the host
// nor in any file under the host's HOME.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { runFinished, sshStartRequest, testRunManager, trustingConnectOptions } from '../../support/runHosts';
import { buildTinyModel, trainingPython } from '../../harness/trainingVenv';
import { REPO_ROOT } from '../../harness/codeServer';
import { HfHubEmulator } from '../../emulators/hfHub';
import { mergeAdapter, mergePlan } from '../../../src/core/runs/outputs/adapterMerge';
import { publishToHub } from '../../../src/core/runs/outputs/hubPublish';
import type { OpLine, OnRunHost } from '../../../src/core/runs/hosts/hostOps';
import { remoteWorkspaceName } from '../../../src/core/runs/lifecycle/runManager';
import type { RunManager } from '../../../src/core/runs/lifecycle/runManager';

const TOKEN = 'hf_' + 'SeCrEt'.repeat(6);
let sshd: Sshd;
let python: string;
let root: string;

// A user's own script: a LoRA adapter on the tiny base with random B matrices (so it changes the logits).
const MAKE_ADAPTER = `import sys, torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, AutoTokenizer
base = sys.argv[1]
torch.manual_seed(3)
model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                       LoraConfig(r=8, lora_alpha=16, target_modules="all-linear", init_lora_weights=False, task_type="CAUSAL_LM"))
model.save_pretrained("outputs/adapter")
AutoTokenizer.from_pretrained(base).save_pretrained("outputs/adapter")
print("{'loss': 1.25, 'epoch': 1.0}", flush=True)
`;

// base+adapter (peft, unmerged) against the merged folder loaded with plain transformers.
const COMPARE = `import json, sys, torch
from peft import PeftModel
from transformers import AutoModelForCausalLM, AutoTokenizer
base, adapter, merged = sys.argv[1:4]
tok = AutoTokenizer.from_pretrained(adapter)
ids = tok(["The capital of Peru is Lima."], return_tensors="pt")["input_ids"]
with torch.no_grad():
    plain = AutoModelForCausalLM.from_pretrained(base).eval()
    p0 = plain(input_ids=ids).logits
    ref = PeftModel.from_pretrained(plain, adapter).eval()(input_ids=ids).logits
    out = AutoModelForCausalLM.from_pretrained(merged).eval()(input_ids=ids).logits
print(json.dumps({"diff": (out - ref).abs().max().item(), "effect": (ref - p0).abs().max().item()}))
`;

before(async () => {
  python = trainingPython();
  root = mkdtempSync(join(tmpdir(), 'rft-merge-publish-'));
  buildTinyModel(python, join(root, 'base'));
  sshd = await startSshd();
});
after(async () => {
  await sshd?.stop();
  rmSync(root, { recursive: true, force: true });
});

/** Every file under dir (not following links), for the search for a leaked token. */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) out.push(...filesUnder(p));
    else if (st.isFile() && st.size < 50e6) out.push(p);
  }
  return out;
}

async function finishedRun(m: RunManager, ws: string): Promise<string> {
  const base = join(root, 'base');
  const req = sshStartRequest(sshd, ws, 'tiny-merge', `${python} make_adapter.py ${base}`);
  const spec = { ...req.spec, model: { id: base } };
  const started = m.start({ ...req, spec, specText: JSON.stringify(spec), gpu: 'T4' });
  const rec = await started;
  const f = await runFinished(m, rec.id, 240_000);
  assert.equal(f.record.status, 'completed', JSON.stringify(f.record.failure));
  return rec.id;
}

test('merge the adapter on the host over SSH, then push the merged model to a private Hub repo', { timeout: 600_000 }, async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  writeFileSync(join(ws, 'make_adapter.py'), MAKE_ADAPTER);
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, trustingConnectOptions([sshd]), { remotePython: python });
  const hub = await new HfHubEmulator({ [TOKEN]: 'alice' }).start();
  try {
    const id = await finishedRun(m, ws);
    const onRunHost: OnRunHost = (runId, fn, signal) => m.onRunHost(runId, fn, signal);

    // The plan for the record's T4 (no bf16) is fp16 on the GPU; this host has no GPU, so the test asks for fp32
    // on the CPU, where the merged logits must equal base+adapter exactly enough to compare at 1e-4.
    assert.equal(mergePlan(m.store.get(id)!.gpu, 'tiny').dtype, 'fp16');
    const progress: OpLine[] = [];
    const merged = await mergeAdapter(onRunHost, id, { dtype: 'fp32', device: 'cpu', env: { HF_HUB_OFFLINE: '1' }, onProgress: (l) => progress.push(l) });
    assert.deepEqual(
      progress.map((l) => l.stage),
      ['loading-base', 'loading-adapter', 'merging', 'saving', 'done'],
    );
    assert.ok(progress.every((l) => typeof l.message === 'string' && l.message.length > 0));
    assert.equal(merged.path, 'outputs/merged');
    assert.ok((merged.bytes ?? 0) > 100_000, `merged size ${merged.bytes}`);

    // The host is this machine: its workspace copy is under the sshd's HOME.
    const wsRemote = join(sshd.home, '.remote-finetune/workspaces', remoteWorkspaceName(ws));
    const cmp = JSON.parse(
      execFileSync(python, ['-c', COMPARE, join(root, 'base'), join(wsRemote, 'outputs/adapter'), join(wsRemote, 'outputs/merged')], {
        env: { ...process.env, HF_HUB_OFFLINE: '1' },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      })
        .trim()
        .split('\n')
        .pop()!,
    ) as { diff: number; effect: number };
    console.log(`merged over SSH: max |merged - (base+adapter)| = ${cmp.diff.toExponential(2)}, adapter effect ${cmp.effect.toFixed(3)}`);
    assert.ok(cmp.effect > 1e-2, 'the adapter changes the logits');
    assert.ok(cmp.diff < 1e-4, `merged logits equal base+adapter (max diff ${cmp.diff})`);

    // Push, watching the host's process list for the token the whole time.
    let seenInArgv = false;
    let polls = 0;
    let polling = true;
    const poll = (async (): Promise<void> => {
      while (polling) {
        const ps = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
        if (ps.includes('SeCrEt')) seenInArgv = true;
        if (/remote_finetune(_entry\.py)? publish/.test(ps)) polls++;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const pushProgress: OpLine[] = [];
    let pushed;
    try {
      pushed = await publishToHub(onRunHost, m.store.get(id)!, {
        what: 'merged',
        repo: 'tiny-merged',
        private: true,
        token: TOKEN,
        env: { HF_ENDPOINT: hub.url, HF_HUB_DISABLE_XET: '1' },
        onProgress: (l) => pushProgress.push(l),
      });
    } finally {
      polling = false;
      await poll;
    }
    assert.ok(polls >= 3, `the process list was read while publish ran (${polls} times)`);
    assert.equal(seenInArgv, false, 'the token never appears in a command line on the host');
    assert.equal(pushed.repo, 'alice/tiny-merged');
    assert.equal(pushed.private, true);
    assert.ok(pushProgress.some((l) => l.stage === 'uploading' && l.file === 'model.safetensors'));
    const repo = hub.repos.get('alice/tiny-merged')!;
    assert.equal(repo.private, true);
    const files = [...repo.files.keys()].sort();
    for (const f of ['README.md', 'config.json', 'model.safetensors', 'tokenizer.json']) assert.ok(files.includes(f), files.join(', '));
    assert.ok(!files.includes('remote_finetune_merge.json') && !files.includes('adapter_config.json'), files.join(', '));
    assert.equal(repo.files.get('model.safetensors')!.lfs, true);
    assert.deepEqual(repo.files.get('model.safetensors')!.content, readFileSync(join(wsRemote, 'outputs/merged/model.safetensors')));
    const card = repo.files.get('README.md')!.content.toString('utf8');
    assert.match(card, /^---\n[\s\S]*library_name: transformers[\s\S]*\n---\n/);
    // The host has no nvidia-smi: the card names what the run had beside what its spec asked (issue 39.1).
    assert.match(card, /\| GPU \| CPU only \(spec asked T4\) \|/);
    assert.match(card, /run "tiny-merge"/);
    assert.ok(!card.includes(root), 'the host-local base model path stays out of the card');

    // And the token was written nowhere on the host.
    const leaked = filesUnder(sshd.home).filter((p) => readFileSync(p).includes('SeCrEt'));
    assert.deepEqual(leaked, []);
  } finally {
    await hub.stop();
    await m.dispose();
  }
});

test('a bad token: the push fails with the Hub 401 in words, over SSH', { timeout: 300_000 }, async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  writeFileSync(join(ws, 'make_adapter.py'), MAKE_ADAPTER);
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, trustingConnectOptions([sshd]), { remotePython: python });
  const hub = await new HfHubEmulator({ [TOKEN]: 'alice' }).start();
  try {
    const id = await finishedRun(m, ws);
    await assert.rejects(
      publishToHub((r, fn, s) => m.onRunHost(r, fn, s), m.store.get(id)!, {
        what: 'adapter',
        repo: 'tiny-lora',
        private: true,
        token: 'hf_wrong_token_000000000000',
        env: { HF_ENDPOINT: hub.url, HF_HUB_DISABLE_XET: '1' },
      }),
      /refused the token \(401\)/,
    );
    assert.equal(hub.repos.size, 0);
  } finally {
    await hub.stop();
    await m.dispose();
  }
});

test('cancelling a merge stops the process on the host', { timeout: 300_000 }, async () => {
  const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
  writeFileSync(join(ws, 'make_adapter.py'), MAKE_ADAPTER);
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, trustingConnectOptions([sshd]), { remotePython: python });
  try {
    const id = await finishedRun(m, ws);
    const abort = new AbortController();
    const runDir = m.store.get(id)!.remoteDir!.replace(/^~\//, `${sshd.home}/`);
    const merging = (): boolean =>
      execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
        .split('\n')
        .some((l) => /remote_finetune(_entry\.py)? merge/.test(l) && l.includes(runDir));
    await assert.rejects(
      mergeAdapter((r, fn, s) => m.onRunHost(r, fn, s), id, {
        dtype: 'fp32',
        device: 'cpu',
        env: { HF_HUB_OFFLINE: '1' },
        signal: abort.signal,
        onProgress: (l) => {
          if (l.stage === 'loading-base') {
            assert.ok(merging(), 'the merge runs on the host');
            abort.abort();
          }
        },
      }),
      /cancelled/,
    );
    const end = Date.now() + 10_000;
    while (merging() && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
    assert.equal(merging(), false, 'no merge process left on the host');
  } finally {
    await m.dispose();
  }
});

test('a run found on the host (started elsewhere): its workspace is read from the host, the Hub from the host environment', { timeout: 300_000 }, async () => {
  const hub = await new HfHubEmulator({ [TOKEN]: 'alice' }).start();
  // The host's python3 is the training venv's; HF_ENDPOINT comes from the host's own environment.
  const other = await startSshd({ pathPrepend: [dirname(python)], env: { HF_ENDPOINT: hub.url, HF_HUB_DISABLE_XET: '1' } });
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, trustingConnectOptions([other]));
  try {
    const ws = mkdtempSync(join(tmpdir(), 'rft-found-'));
    cpSync(join(REPO_ROOT, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
    const target = `${other.user}@127.0.0.1:${other.port}`;
    const starter = testRunManager(mkdtempSync(join(tmpdir(), 'rft-elsewhere-')), trustingConnectOptions([other]));
    const req = sshStartRequest(other, ws, 'elsewhere', 'python3 train.py --steps 3 --sleep 0.1');
    const rec = await starter.start(req);
    await runFinished(starter, rec.id, 120_000);
    await starter.dispose();

    const found = await m.discover(target, { identityFile: other.userKeyPath });
    const f = found.find((r) => r.id === rec.id);
    assert.ok(f, 'the run is found on the host');
    assert.equal(f.workspaceDir, undefined, 'this machine does not know its workspace');
    const pushed = await publishToHub((r, fn, s) => m.onRunHost(r, fn, s), m.store.get(rec.id)!, {
      what: 'adapter',
      repo: 'found-lora',
      private: true,
      token: TOKEN,
    });
    assert.equal(pushed.repo, 'alice/found-lora');
    assert.ok(pushed.files.includes('adapter_config.json') && pushed.files.includes('adapter_model.safetensors'), pushed.files.join(', '));
    assert.equal(hub.repos.get('alice/found-lora')?.private, true);
  } finally {
    await m.dispose();
    await other.stop();
    await hub.stop();
  }
});
