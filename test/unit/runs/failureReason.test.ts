// Issue 39.2: a failed run says why. With no recognised failure, the last exception line of its log and the file
// and line it was raised at in the workspace's code; a traceback path inside the synced workspace (the host's
// <root>/workspaces/<name>/…) names the local file, and host text never reaches a file outside the workspace.
// The traceback is a real one: python3 runs the workspace's code from a host-shaped folder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { explainFailure, failureShort, lastException, localSourceFile, tracebackSource, workspaceRelative } from '../../../src/core/runs/view/failureReason';
import { remoteWorkspaceName } from '../../../src/core/runs/store/runPaths';
import { runOutcome } from '../../../src/core/runs/lifecycle/runFinish';
import { runDescription, runTooltipLines, finishedMessage } from '../../../src/core/runs/view/runSummary';
import type { RunManagerContext } from '../../../src/core/runs/lifecycle/runTypes';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';

/** A local workspace and the host's copy of it, where python3 raised in helper.py called from train.py. */
function failedRun(): { ws: string; hostWs: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'rft-fail-'));
  const ws = join(dir, 'my project');
  mkdirSync(join(ws, 'lib'), { recursive: true });
  writeFileSync(join(ws, 'train.py'), 'import sys\nsys.path.insert(0, "lib")\nimport helper\n\n\ndef main():\n    helper.check(3)\n\n\nmain()\n');
  writeFileSync(join(ws, 'lib', 'helper.py'), 'def check(n):\n    if n > 2:\n        raise ValueError("batch_size %d does not divide the data" % n)\n');
  const hostWs = join(dir, 'home', '.remote-finetune', 'workspaces', remoteWorkspaceName(ws));
  mkdirSync(hostWs, { recursive: true });
  cpSync(ws, hostWs, { recursive: true });
  const r = spawnSync('python3', [join(hostWs, 'train.py')], { cwd: hostWs, encoding: 'utf8' });
  assert.equal(r.status, 1, r.stderr);
  return { ws, hostWs, log: `step 1 loss 2.0\n${r.stderr}` };
}

test('the last exception line and where the workspace code raised it, from a real traceback', () => {
  const { ws, log } = failedRun();
  const exc = lastException(log);
  assert.equal(exc?.line, 'ValueError: batch_size 3 does not divide the data');
  const explained = explainFailure({ message: 'the run exited with code 1; see its log' }, log, ws);
  assert.equal(explained.message, 'ValueError: batch_size 3 does not divide the data (lib/helper.py:3)');
  assert.deepEqual(explained.at, { file: 'lib/helper.py', line: 3 });
  assert.equal(localSourceFile(ws, explained.at!.file), realpathSync(join(ws, 'lib', 'helper.py')));
  // A recognised failure keeps its words and fix; the place is added.
  const oom = explainFailure({ signature: 'cuda-oom', message: 'torch.OutOfMemoryError: CUDA out of memory.', hint: 'lower the batch' }, log, ws);
  assert.equal(oom.message, 'torch.OutOfMemoryError: CUDA out of memory. (lib/helper.py:3)');
  assert.equal(oom.signature, 'cuda-oom');
  // Raised in a library: an unrecognised exception names the library's line, a recognised failure keeps its words.
  const lib =
    'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py", line 2573, in f\nRuntimeError: boom\n';
  assert.equal(
    explainFailure({ message: 'exit 1' }, lib, ws).message,
    'RuntimeError: boom (/opt/venv/lib/python3.11/site-packages/torch/nn/functional.py:2573)',
  );
  assert.equal(explainFailure({ message: 'exit 1' }, lib, ws).at, undefined, 'no workspace file to open');
  assert.equal(
    explainFailure({ signature: 'cuda-oom', message: 'torch.OutOfMemoryError: CUDA out of memory.' }, lib, ws).message,
    'torch.OutOfMemoryError: CUDA out of memory.',
  );
});

test('runOutcome: a failed run with no error event is told by its exception, not by its exit code', () => {
  const { ws, log } = failedRun();
  const localDir = mkdtempSync(join(tmpdir(), 'rft-mirror-'));
  writeFileSync(join(localDir, 'output.log'), log);
  const rec = { id: 'rft-x', localDir, workspaceDir: ws } as unknown as RunRecord;
  const ctx = { localDirOf: () => localDir, isStopping: () => false } as unknown as RunManagerContext;
  const out = runOutcome(ctx, rec, 1);
  assert.equal(out.status, 'failed');
  assert.equal(out.failure?.message, 'ValueError: batch_size 3 does not divide the data (lib/helper.py:3)');
  assert.deepEqual(out.failure?.at, { file: 'lib/helper.py', line: 3 });
  // The row, its tooltip and the notification carry it.
  const r = {
    id: 'rft-x',
    name: 'sft',
    specPath: '',
    specHash: '',
    createdAt: new Date().toISOString(),
    updatedAt: new Date().toISOString(),
    status: 'failed',
    provider: 'ssh',
    failure: out.failure,
  } as RunRecord;
  assert.match(runDescription(r), / · failed \(ValueError at lib\/helper\.py:3\)/);
  assert.ok(runTooltipLines(r).includes('ValueError: batch_size 3 does not divide the data (lib/helper.py:3)'));
  assert.match(
    finishedMessage({ record: r, failure: out.failure! }).text,
    /^sft failed\. ValueError: batch_size 3 does not divide the data \(lib\/helper\.py:3\)/,
  );
  assert.equal(failureShort({ signature: 'cuda-oom', message: 'x' }), 'cuda-oom');
});

test('host paths resolve only to files inside the local workspace: no .., no absolute path, no symlink out', () => {
  const { ws } = failedRun();
  const name = remoteWorkspaceName(ws);
  assert.equal(workspaceRelative(`/home/u/.remote-finetune/workspaces/${name}/lib/helper.py`, ws), 'lib/helper.py');
  assert.equal(workspaceRelative('train.py', ws), 'train.py', 'relative to the runner working directory');
  assert.equal(workspaceRelative(`/home/u/.remote-finetune/workspaces/${name}/../other/x.py`, ws), undefined);
  assert.equal(workspaceRelative('../../etc/passwd', ws), undefined);
  assert.equal(workspaceRelative('/usr/lib/python3/dist-packages/torch/nn/module.py', ws), undefined, 'a library is no workspace file');
  assert.equal(workspaceRelative('/home/u/.remote-finetune/workspaces/other-12345678/train.py', ws), undefined, 'another workspace');
  assert.equal(workspaceRelative('<frozen runpy>', ws), undefined);
  const outside = mkdtempSync(join(tmpdir(), 'rft-outside-'));
  writeFileSync(join(outside, 'secret.py'), 'x = 1\n');
  symlinkSync(join(outside, 'secret.py'), join(ws, 'link.py'));
  symlinkSync(outside, join(ws, 'linkdir'));
  assert.equal(localSourceFile(ws, 'link.py'), undefined, 'a symlink out of the workspace');
  assert.equal(localSourceFile(ws, 'linkdir/secret.py'), undefined, 'a symlinked folder out of the workspace');
  assert.equal(localSourceFile(ws, '../rft-outside/secret.py'), undefined);
  assert.equal(localSourceFile(ws, join(outside, 'secret.py')), undefined);
  assert.equal(localSourceFile(ws, 'lib'), undefined, 'a folder is not a file');
  assert.equal(localSourceFile(ws, 'missing.py'), undefined);
  assert.equal(localSourceFile(ws, 'train.py'), realpathSync(join(ws, 'train.py')));
  // What a log panel link asks for: the host path of a frame, checked the same way.
  assert.equal(tracebackSource(ws, `/root/.remote-finetune/workspaces/${name}/lib/helper.py`), realpathSync(join(ws, 'lib', 'helper.py')));
  assert.equal(tracebackSource(ws, `/root/.remote-finetune/workspaces/${name}/link.py`), undefined);
  assert.equal(tracebackSource(ws, `/root/.remote-finetune/workspaces/${name}/lib/../../../etc/passwd`), undefined);
  assert.equal(tracebackSource(undefined, 'train.py'), undefined, 'a local log file has no workspace');
});
