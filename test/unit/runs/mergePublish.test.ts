// Merge Adapter and Push to Hub, the pure parts (issue 20.3): the merge dtype plan from the GPU catalog, the
// repo name rules and default, the card facts, the host command line (no secret in it, everything quoted) and
// the reading of the runner's JSON lines from a real child process standing in for the SSH channel.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mergePlan } from '../../../src/core/runs/outputs/adapterMerge';
import { cardFacts, defaultRepoName, repoNameProblem } from '../../../src/core/runs/outputs/hubPublish';
import { pythonFromBootstrap, runHostOp, runnerOpCommand, workspaceFromCommandScript } from '../../../src/core/runs/hosts/hostOps';
import { shellQuote } from '../../../src/core/ssh/quote';
import type { OpLine, RunHostPaths } from '../../../src/core/runs/hosts/hostOps';
import type { RunRecord } from '../../../src/core/runs/store/runRecord';
import type { SshSession } from '../../../src/core/ssh/session';

test('merge plan: bf16 on Ampere and later, fp16 on older GPUs, fp32 on the CPU when unknown or too big', () => {
  assert.deepEqual([mergePlan('A100-80GB', 'meta-llama/Llama-3.1-8B').dtype, mergePlan('A100-80GB', 'meta-llama/Llama-3.1-8B').device], ['bf16', 'auto']);
  assert.match(mergePlan('A100-80GB', 'meta-llama/Llama-3.1-8B').reason, /about 19\.3 GB/);
  assert.equal(mergePlan('T4', 'Qwen/Qwen2.5-1.5B').dtype, 'fp16');
  assert.equal(mergePlan('V100', undefined).dtype, 'fp16');
  assert.deepEqual(mergePlan(undefined, 'meta-llama/Llama-3.1-8B'), { dtype: 'fp32', device: 'cpu', reason: 'no GPU known for this host: fp32 on the CPU' });
  assert.equal(mergePlan('my-weird-gpu', undefined).device, 'cpu');
  // 70B in 16 bits is ~170 GB with the merge's overhead: not on an 80 GB GPU.
  const big = mergePlan('H100', 'meta-llama/Llama-3.1-70B');
  assert.equal(big.device, 'cpu');
  assert.match(big.reason, /more than H100's 80 GB/);
  // An 8B model fits a 24 GB L4 in bf16.
  assert.equal(mergePlan('L4', 'meta-llama/Llama-3.1-8B').dtype, 'bf16');
});

test('repo names: the Hub rules, and a default from the run name', () => {
  assert.equal(repoNameProblem('my-model'), undefined);
  assert.equal(repoNameProblem('alice/my_model.v2'), undefined);
  assert.match(repoNameProblem('a/b/c')!, /namespace\/name/);
  assert.match(repoNameProblem('-bad')!, /start and end/);
  assert.match(repoNameProblem('with space')!, /letters, digits/);
  assert.match(repoNameProblem('a--b')!, /"--"/);
  assert.match(repoNameProblem('x'.repeat(97))!, /96/);
  const rec = { id: 'R20260101ABC', name: 'Llama 3.1 8B — QLoRA (run #2)' };
  assert.equal(defaultRepoName(rec, 'adapter'), 'llama-3.1-8b-qlora-run-2-lora');
  assert.equal(defaultRepoName(rec, 'merged'), 'llama-3.1-8b-qlora-run-2-merged');
  assert.equal(defaultRepoName({ id: 'R1', name: '###' }, 'adapter'), 'run-r1-lora');
  for (const name of ['a'.repeat(200), '..x..', '  y  ', 'ÜÖ']) assert.equal(repoNameProblem(defaultRepoName({ id: 'R1', name }, 'merged')), undefined, name);
});

test('card facts: the run name, the GPU and the wall time, nothing else from the record', () => {
  const rec = {
    id: 'R1',
    name: 'demo',
    gpu: 'A100-40GB',
    createdAt: '2026-01-01T00:00:00Z',
    finishedAt: '2026-01-01T01:02:03Z',
    host: 'me@secret-host',
    identityFile: '/home/me/.ssh/id',
    workspaceDir: '/home/me/work',
  } as unknown as RunRecord;
  assert.deepEqual(cardFacts(rec), { run_name: 'demo', gpu: 'A100-40GB', duration_s: 3723 });
});

const AT: RunHostPaths = {
  root: '/h/.remote-finetune',
  runDir: '/h/.remote-finetune/runs/R1',
  workspace: "/h/ws/it's",
  runner: '/h/.remote-finetune/runner/1',
  python: '/h/venv/bin/python',
};

test('host command: quoted paths, non-secret environment, PYTHONSAFEPATH, and no way to slip in a variable name', () => {
  const cmd = runnerOpCommand(AT, ['publish', '--workdir', AT.workspace, '--repo', 'x; rm -rf ~'], { HF_ENDPOINT: 'http://127.0.0.1:1/$(id)' });
  assert.ok(
    cmd.startsWith(
      `cd /h/.remote-finetune/runs/R1 && PYTHONSAFEPATH=1 PYTHONPATH=/h/.remote-finetune/runner/1 HF_ENDPOINT='http://127.0.0.1:1/$(id)' exec /h/venv/bin/python /h/.remote-finetune/runner/1/remote_finetune_entry.py publish `,
    ),
    cmd,
  );
  assert.ok(cmd.includes(`'/h/ws/it'\\''s'`), cmd);
  assert.ok(cmd.includes(`'x; rm -rf ~'`), cmd);
  assert.throws(() => runnerOpCommand(AT, [], { 'A;B': '1' }), /bad variable name/);
});

test('bootstrap.json names the interpreter only as an absolute path', () => {
  assert.equal(pythonFromBootstrap('{"python": "/home/u/.remote-finetune/venvs/x/bin/python"}'), '/home/u/.remote-finetune/venvs/x/bin/python');
  assert.equal(pythonFromBootstrap('{"python": "python3"}'), undefined);
  assert.equal(pythonFromBootstrap('{"python": "/x\\n/y"}'), undefined);
  assert.equal(pythonFromBootstrap('not json'), undefined);
  assert.equal(pythonFromBootstrap(''), undefined);
  // The bootstrap writes progress lines before its verdict: the last JSON line with a python wins.
  assert.equal(pythonFromBootstrap('{"step": "venv"}\nsome pip output\n{"python": "/h/venv/bin/python", "lock": "x"}\n'), '/h/venv/bin/python');
});

test("the run's workspace is read back from command.sh as startDetached writes it", () => {
  for (const dir of ['/home/u/.remote-finetune/workspaces/ws-1234', "/home/u/it's here/ws", '/tmp/a b']) {
    assert.equal(workspaceFromCommandScript(`cd ${shellQuote(dir)} || exit 96\ncd "$RFT_RUN_DIR" && ...\n`), dir);
  }
  assert.equal(workspaceFromCommandScript('cd relative || exit 96\n'), undefined);
  assert.equal(workspaceFromCommandScript("cd '/x'; rm -rf / || exit 96"), undefined);
  assert.equal(workspaceFromCommandScript(''), undefined);
});

/** A local child process behind the two session calls runHostOp uses: the channel is its stdio. */
function localSession(): { session: SshSession; commands: string[]; stdins: string[] } {
  const commands: string[] = [];
  const stdins: string[] = [];
  const exits = new WeakMap<object, Promise<{ code: number | null; signal: string | null }>>();
  const session = {
    execStream: async (command: string) => {
      commands.push(command);
      const child = spawn('bash', ['-c', command]);
      child.stdin.on('error', () => {}); // a process that exits before reading its stdin
      const ch = Object.assign(new EventEmitter(), {
        stderr: child.stderr,
        end: (data: string) => {
          stdins.push(data);
          child.stdin.end(data);
        },
        signal: (name: string) => child.kill(`SIG${name}` as NodeJS.Signals),
        close: () => child.kill('SIGKILL'),
      });
      child.stdout.on('data', (d: Buffer) => ch.emit('data', d));
      exits.set(ch, new Promise((r) => child.once('exit', (code, signal) => r({ code, signal }))));
      child.once('close', () => ch.emit('close'));
      return ch;
    },
    exitOf: (ch: object) => exits.get(ch),
  } as unknown as SshSession;
  return { session, commands, stdins };
}

test('runHostOp: progress lines in order, the done line returned, stray output and bad lines ignored, stdin delivered', async () => {
  const { session, stdins } = localSession();
  const seen: OpLine[] = [];
  const script = [
    'read -r secret',
    'echo "not json from a library"',
    `echo '{"op":"merge","stage":"loading-base","message":"loading"}'`,
    `echo '{"op":42,"stage":"bad"}'`,
    `printf '{"op":"merge","stage":"saving","mess'; sleep 0.05; printf 'age":"saving"}\\n'`,
    `echo "{\\"op\\":\\"merge\\",\\"stage\\":\\"done\\",\\"path\\":\\"outputs/merged\\",\\"got\\":\${#secret}}"`,
  ].join('\n');
  const done = await runHostOp(session, script, '{"token":"hf_x"}\n', (l) => seen.push(l));
  assert.deepEqual(
    seen.map((l) => l.stage),
    ['loading-base', 'saving', 'done'],
  );
  assert.equal(done.path, 'outputs/merged');
  assert.equal(done.got, 16, 'the whole stdin reached the process');
  assert.deepEqual(stdins, ['{"token":"hf_x"}\n']);
});

test('runHostOp: an error line rejects with its message; a death without one rejects with stderr', async () => {
  const { session } = localSession();
  await assert.rejects(
    runHostOp(session, `echo '{"op":"publish","stage":"error","message":"the Hub refused the token (401)"}'; exit 1`, '', () => {}),
    /refused the token \(401\)/,
  );
  await assert.rejects(
    runHostOp(session, `echo 'Traceback: ImportError: peft' >&2; exit 1`, '', () => {}),
    /exit 1.*ImportError: peft/,
  );
  // done but a non-zero exit is not success
  await assert.rejects(
    runHostOp(session, `echo '{"op":"merge","stage":"done"}'; exit 3`, '', () => {}),
    /exit 3/,
  );
});

test('runHostOp: cancel signals the process and rejects', async () => {
  const { session } = localSession();
  const abort = new AbortController();
  const p = runHostOp(session, `echo '{"op":"merge","stage":"loading-base"}'; sleep 30`, '', () => abort.abort(), abort.signal);
  const t0 = Date.now();
  await assert.rejects(p, /cancelled/);
  assert.ok(Date.now() - t0 < 5000);
});
