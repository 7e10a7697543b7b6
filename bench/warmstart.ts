// `npm run bench -- warmstart`: "Start" on an existing, already-synced SSH host, to the run's first log line
// in our local mirror, against doing the same by hand with OpenSSH as a practised user does: one ControlMaster
// connection kept open (ControlPersist), and over it `rsync -a` of the workspace, then
// `ssh host 'cd … && nohup python3 train.py > log 2>&1 &'`, then `ssh host tail -F log` until that line.
//
// Like for like: one loopback sshd, one pinned cipher both sides (bench/lib/sshBench.ts), the same workspace
// (a 500-file project with a 20 MiB data file, synced once by each before timing, so both only compare), the
// same script (examples/demo-host-own-script/train.py, whose first line is "loading model …"), and the clock
// stops for both when that line has arrived on this machine. Ours is the RunManager the extension uses, new
// for every start, the connection it opened before timing kept open as the reference's master is (a second Start
// in the same window): it also syncs the runner, writes spec.json and the 0600 env file and starts the run under
// its wrapper, all of which the reference does not do. A B alternating, median of the pairs. Goal: ours / by
// hand <= 1.0. The verdict records the reference's command lines.
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { SSH_CODE, commandLine, startBenchHost, makeRandomFile, makeTree, runTool } from './lib/sshBench';
import { measurePairs, median, printTable, printVerdict, timeMs } from './lib/pairs';
import type { RunManager } from '../src/core/runs/lifecycle/runManager';
import { TERMINAL_STATUSES } from '../src/core/runs/store/runRecord';

const REPO = resolve(__dirname, '..');
const PAIRS = Number(process.env.RFT_BENCH_PAIRS ?? 7);
const FIRST_LINE = 'loading model';
// Short runs: each ends by itself within a second, so pairs do not load the host for the next one.
const SCRIPT_ARGS = '--steps 3 --sleep 0.05';

async function main(): Promise<void> {
  const bench = await startBenchHost();
  const ws = mkdtempSync(join(tmpdir(), 'rft-bench-warm-'));
  cpSync(join(REPO, 'examples/demo-host-own-script/train.py'), join(ws, 'train.py'));
  makeTree(join(ws, 'src'), 500, 5 * 1024 * 1024);
  makeRandomFile(join(ws, 'data.bin'), 20);
  const storage = mkdtempSync(join(tmpdir(), 'rft-bench-warm-store-'));
  const spec = {
    version: 1,
    name: 'warm',
    command: `python3 train.py ${SCRIPT_ARGS}`,
    target: { provider: 'ssh', host: bench.client.alias, gpu: 'A100-80GB' },
    outputs: { dir: 'outputs', download: [] as string[] },
  };
  const { RunManager, RunStore, Ledger, sshSync } = bench.shipped;
  const store = new RunStore(join(storage, 'runs.json'));
  const m: RunManager = new RunManager({
    store,
    storageDir: storage,
    runnerDir: join(REPO, 'python-runner'),
    runnerVersion: 'bench',
    connectOptions: bench.client.options,
    ledger: new Ledger(join(storage, 'instances.json')),
    sync: sshSync(join(storage, 'sync-cache')),
  });

  /**
   * Untimed, after each side: its run has ended (ours: the record's status, which waits for the runner's own
   * finishing work such as the pip freeze record), so neither side's timing shares the CPU with the other's tail end.
   */
  let lastId = '';
  const oursEnded = async (): Promise<void> => {
    const deadline = Date.now() + 30_000;
    while (!TERMINAL_STATUSES.has(store.get(lastId)?.status ?? 'planned')) {
      if (Date.now() > deadline) throw new Error(`run ${lastId} did not end`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  /** Ours: Start → the first line in the local mirror. */
  const ours = async (): Promise<void> => {
    const rec = await m.start({
      specPath: join(ws, 'finetune.yaml'),
      specText: JSON.stringify(spec),
      spec,
      name: 'warm',
      workspaceDir: ws,
      env: {},
      target: { kind: 'ssh', host: bench.client.alias },
      teardown: { policy: 'terminate' },
    });
    lastId = rec.id;
    const log = join(m.localDirOf(rec.id), 'output.log');
    const deadline = Date.now() + 30_000;
    while (!(existsSync(log) && readFileSync(log, 'utf8').includes(FIRST_LINE))) {
      if (Date.now() > deadline) throw new Error(`no first line in ${log}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };

  const remoteRef = 'warm-by-hand';
  // The practised user's one connection: a ControlMaster opened (and persisted) before anything is timed.
  const socket = join(mkdtempSync(join(tmpdir(), 'rft-bench-cm-')), 'cm');
  const mux = ['-o', `ControlPath=${socket}`];
  await runTool('ssh', ['-M', '-f', '-N', '-o', 'ControlPersist=yes', ...mux, ...bench.sshArgv()]);
  const viaMaster = (): string[] => [...mux, ...bench.sshArgv()];
  const rsh = `${bench.rsyncRsh()} -o ControlPath=${socket}`;
  let n = 0;
  const commands: string[] = [];
  /** By hand: rsync, ssh nohup, ssh tail -F until the first line, all over the one master connection. */
  const byHand = async (): Promise<void> => {
    const log = `out-${n++}.log`;
    const rsyncArgs = ['-a', '-e', rsh, `${ws}/`, `${bench.dest}:${remoteRef}/`];
    const startArgs = [...viaMaster(), `cd ${remoteRef} && nohup python3 train.py ${SCRIPT_ARGS} > ${log} 2>&1 < /dev/null &`];
    const tailArgs = [...viaMaster(), `tail -n +1 -F ${remoteRef}/${log}`];
    commands.splice(0, commands.length, commandLine('rsync', rsyncArgs), commandLine('ssh', startArgs), commandLine('ssh', tailArgs));
    await runTool('rsync', rsyncArgs);
    await runTool('ssh', startArgs);
    await new Promise<void>((res, rej) => {
      const tail = spawn('ssh', tailArgs, { stdio: ['ignore', 'pipe', 'ignore'] });
      let out = '';
      const timer = setTimeout(() => {
        tail.kill('SIGKILL');
        rej(new Error('no first line from tail -F'));
      }, 30_000);
      tail.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes(FIRST_LINE)) {
          clearTimeout(timer);
          tail.kill('SIGTERM');
          res();
        }
      });
    });
  };

  // Warm both: the first sync of each (and our runner and venv-free own-script bootstrap) is not timed.
  await ours();
  await oursEnded();
  await byHand();
  const r = await measurePairs(
    PAIRS,
    async () => {
      const ms = await timeMs(ours);
      await oursEnded();
      return ms;
    },
    async () => {
      const ms = await timeMs(byHand);
      // The script ends itself (3 steps of 50 ms) and loads nothing in the background.
      await new Promise((r) => setTimeout(r, 500));
      return ms;
    },
  );
  const om = median(r.ours);
  const rm = median(r.reference);
  printTable(`warmstart: Start on an already-synced SSH host → first log line here (${PAIRS} pairs, A B alternating)`, [
    ['ours median (ms)', om],
    ['by hand (rsync + ssh nohup + ssh tail -F) median (ms)', rm],
    ['ours min / max (ms)', `${Math.min(...r.ours).toFixed(0)} / ${Math.max(...r.ours).toFixed(0)}`],
    ['by hand min / max (ms)', `${Math.min(...r.reference).toFixed(0)} / ${Math.max(...r.reference).toFixed(0)}`],
  ]);
  await m.dispose();
  await runTool('ssh', ['-O', 'exit', ...viaMaster()]).catch(() => undefined);
  await bench.stop();
  printVerdict({
    bench: 'warmstart',
    metric: 'ms from Start to the first log line here (already-synced SSH host, connection open on both sides)',
    ours: om,
    reference: rm,
    goal: '<= 1.0',
    samples: r,
    covers: [...SSH_CODE, 'src/core/runs', 'python-runner/remote_finetune'],
    referenceCommand: commands.join(' ; '),
    extra: { cipher: bench.cipher, ...bench.shippedFields, files: 502, pairs: PAIRS },
  });
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
