// The user's own runs make the next estimate better (issue 32.4), end to end: a cloud run through the
// RunManager (the GCP provider's real client against the Compute Engine emulator, a test double, whose
// instance boots for 1.5 s; the instance is a real loopback OpenSSH server running the real python-runner).
// The host measures what the run used (per-GPU torch peaks through the runner's callback core, here from a
// stand-in function since this machine has no GPU; nvidia-smi's peak from the stand-in in
// test/support/standins, an A100-40GB whose memory.used moves between 30% and 50%; tokens/s after warm-up;
// seconds to the first step) and the record keeps it with the provisioning wait and the cost, beside the
// estimate the run started with. The Runs view's tooltip sets one against the other with the error, and a
// new estimate of the same case takes the measurement and says so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startSshd } from '../../support/sshd';
import type { Sshd } from '../../support/sshd';
import { runFinished, testRunManager } from '../../support/runHosts';
import { gcpOnSshd, isolatedConnectOptions } from '../../support/gcpOnSshd';
import type { Offer } from '../../../src/core/providers/provider';
import type { ConnectOptions } from '../../../src/core/ssh/session';
import { runTooltipLines } from '../../../src/core/runs/view/runSummary';
import { measuredMatch, withMeasuredThroughput } from '../../../src/core/runs/cost/estimateVsActual';
import type { RunEstimated } from '../../../src/core/runs/store/runMeasuredSchema';

const REPO = resolve(__dirname, '../../..');
let sshd: Sshd;
let connectOptions: ConnectOptions;

// 31.2 GiB reserved, as a Llama-3-8B QLoRA run on an A100 might; 2048 tokens a step.
const TRAIN_PY = `import os, time
from remote_finetune.callback import EventsCallbackCore
from remote_finetune.events import EventWriter
from remote_finetune.measured import RankRecorder
peaks = {"index": 0, "torch_peak_allocated_mib": 29900.0, "torch_peak_reserved_mib": 31948.8}
rec = RankRecorder(os.environ["RFT_RUN_DIR"], 0, peaks=lambda: peaks)
core = EventsCallbackCore(EventWriter(os.environ["RFT_EVENTS_FILE"]), run_id="m", model="stand-in", method="own-script", recorder=rec)
time.sleep(1.0)
core.train_begin(True, None, None, 0, 0)
tokens = 0
for step in range(1, 61):
    time.sleep(0.05)
    core.step_end()
    tokens += 2048
    if step % 5 == 0:
        core.log(True, {"loss": 2.0}, step, tokens)
os.makedirs("outputs/adapter", exist_ok=True)
`;

before(async () => {
  sshd = await startSshd({ pathPrepend: [join(REPO, 'test/support/standins')] });
  connectOptions = isolatedConnectOptions('rft-measured-');
});
after(async () => {
  await sshd?.stop();
});

test('measured: the record keeps what the host measured beside the estimate; the next estimate of the case uses it', { timeout: 180_000 }, async () => {
  const { emu, provider } = await gcpOnSshd(sshd);
  const storage = mkdtempSync(join(tmpdir(), 'rft-storage-'));
  const m = testRunManager(storage, connectOptions, { providerFor: () => provider });
  try {
    const ws = mkdtempSync(join(tmpdir(), 'rft-ws-'));
    writeFileSync(join(ws, 'train.py'), TRAIN_PY);
    const spec = {
      version: 1,
      name: 'llama3-qlora',
      command: 'python train.py',
      target: { provider: 'gcp', gpu: 'A100-40GB', zone: 'us-central1-a' },
      teardown: { policy: 'terminate' },
    };
    const offer: Offer = {
      provider: 'gcp',
      instanceType: 'a2-highgpu-1g',
      gpu: 'A100-40GB',
      gpuCount: 1,
      vramGiB: 40,
      region: 'us-central1',
      zone: 'us-central1-a',
      pricePerHour: 3600,
      spot: false,
      capacity: 'unknown',
    };
    // What startTraining would have estimated for this case.
    const estimated: RunEstimated = {
      model: 'meta-llama/Meta-Llama-3-8B',
      gpu: 'A100-40GB',
      gpuCount: 1,
      method: 'qlora',
      seqLen: 2048,
      batch: 16,
      vramGib: 30,
      hours: 0.001,
      costUsd: 40,
      tokensPerSecond: 30000,
    };
    const rec0 = await m.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'llama3-qlora',
      workspaceDir: ws,
      env: {},
      target: {
        kind: 'cloud',
        provider,
        offer,
        sshPublicKey: readFileSync(`${sshd.userKeyPath}.pub`, 'utf8'),
        identityFile: sshd.userKeyPath,
        sshTimeoutMs: 20_000,
      },
      gpu: 'A100-40GB',
      teardown: { policy: 'terminate' },
      estimated,
    });
    const f = await runFinished(m, rec0.id);
    const rec = m.store.get(rec0.id)!;
    assert.equal(f.record.status, 'completed', JSON.stringify(f.record.failure));
    assert.deepEqual(rec.estimated, estimated);
    const g = rec.measured?.gpus?.[0];
    assert.ok(g, JSON.stringify(rec.measured));
    assert.equal(g.index, 0);
    assert.equal(g.torchPeakReservedMib, 31948.8);
    assert.equal(g.torchPeakAllocatedMib, 29900);
    assert.ok(g.smiPeakMib! >= 0.3 * 40960 && g.smiPeakMib! <= 0.5 * 40960, `nvidia-smi stand-in peak ${g.smiPeakMib}`);
    // 2048 tokens every ~50 ms after warm-up: well under 2048 / 0.05 = 40,960 tokens/s, and not far under.
    assert.ok(rec.measured!.tokensPerSecond! > 15_000 && rec.measured!.tokensPerSecond! < 41_000, `tokens/s ${rec.measured!.tokensPerSecond}`);
    assert.ok(rec.measured!.firstStepS! >= 1.0 && rec.measured!.firstStepS! < 30, `first step ${rec.measured!.firstStepS}`);
    assert.ok(rec.readyAt! - rec.launchedAt! >= 1400, `provisioning wait ${rec.readyAt! - rec.launchedAt!} ms (the emulator boots for 1.5 s)`);
    assert.ok(rec.costUsd !== undefined && rec.costUsd > 0);

    const lines = runTooltipLines(rec);
    console.log(lines.join('\n'));
    const vram = lines.find((l) => l.startsWith('VRAM: '));
    assert.equal(vram, 'VRAM: estimated 30.0 GB, actual 31.2 GB (+4%)');
    assert.match(
      lines.find((l) => l.startsWith('Cost: '))!,
      /^Cost: estimated \$40\.00, actual \$\d+\.\d\d \([+−]\d+%\)$/,
    );
    assert.match(
      lines.find((l) => l.startsWith('Training time: '))!,
      /^Training time: estimated 4s, actual \d+s \([+−±]\d+%\)$/,
    );
    assert.match(
      lines.find((l) => l.startsWith('Throughput: '))!,
      /^Throughput: estimated 30,000 tokens\/s, actual [\d,]+ tokens\/s \([+−±]\d+%\)$/,
    );
    assert.match(
      lines.find((l) => l.startsWith('Measured: '))!,
      /^Measured: nvidia-smi peak \d+\.\d GB, first step after \d+s, provisioning wait \d+s, billed \d+s$/,
    );

    // A new estimate of the same case (sequence 1792 is within a quarter of 2048): the user's measurement.
    const match = measuredMatch(m.store.all(), {
      model: 'meta-llama/Meta-Llama-3-8B',
      gpu: 'A100-40GB',
      gpuCount: 1,
      method: 'qlora',
      seqLen: 1792,
      batch: 16,
    });
    assert.ok(match);
    const tps = Math.round(rec.measured!.tokensPerSecond!).toLocaleString('en-US');
    assert.equal(match.text, `measured on run llama3-qlora (${rec.id}), at sequence 2048 and batch 16: 31.2 GB, ${tps} tokens/s`);
    const length = withMeasuredThroughput(
      { known: true, hours: 9, hoursLow: 7, hoursHigh: 11, steps: 1000, tokensPerStep: 32768, tokensPerSecond: 1000, basis: 'model' },
      match,
    );
    assert.ok(length.known);
    assert.equal(length.tokensPerSecond, rec.measured!.tokensPerSecond);
    assert.match(length.basis, /measured on run llama3-qlora/);
    // Another GPU class, method or a sequence twice as long is not the same case.
    assert.equal(measuredMatch(m.store.all(), { ...estimated, gpu: 'H100' }), undefined);
    assert.equal(measuredMatch(m.store.all(), { ...estimated, method: 'lora-bf16' }), undefined);
    assert.equal(measuredMatch(m.store.all(), { ...estimated, seqLen: 4096 }), undefined);
  } finally {
    await m.dispose();
    await emu.stop();
  }
});
