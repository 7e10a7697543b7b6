// `npm run demo`: builds the VSIX, installs it into a real VS Code (code-server) on 127.0.0.1 with
// examples/ open, starts a "Demo host" (this machine over loopback SSH, its own sshd and a throwaway key),
// prints the URL, and keeps running until Ctrl+C. The demo host's GPU panel shows this machine's real state
// (no GPU here: its CPU and memory); the GPU dashboard as it looks on a GPU host is a replay of a real H200
// capture in a workspace folder named so (demoGpuReplay.ts), never passed off as this machine's.
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT, ensureCodeServer, installVsix, startCodeServer } from '../test/harness/codeServer';
import { buildVsix } from '../test/harness/vsix';
import { buildTinyModel, trainingPython } from '../test/harness/trainingVenv';
import { startSshd } from '../test/support/sshd';
import { clientFor } from '../test/support/sshClient';
import { main as preflight } from './preflight.mjs';
import { REPLAY_FOLDER, startGpuReplay } from './demoGpuReplay';

export const DEMO_HOST = 'demo-host';

// package.json runs this file with `exec`, so the SIGTERM npm forwards reaches this process and not an sh
// between them (which would die and leave code-server and sshd running).
// What the demo started, stopped in reverse on Ctrl+C or SIGTERM, also when the signal comes half-way through
// start-up (while the VSIX builds or code-server starts), so no code-server or sshd outlives `npm run demo`.
const stops: Array<() => Promise<void>> = [];
let stopping = false;
function stopAll(signal: NodeJS.Signals): void {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping code-server and the demo host…`);
  void (async () => {
    for (const s of stops.reverse()) {
      try {
        await s();
      } catch {
        /* keep stopping the rest */
      }
    }
    process.exit(0);
  })();
}
process.on('SIGINT', stopAll);
process.on('SIGTERM', stopAll);
process.on('SIGHUP', stopAll);

async function main(): Promise<void> {
  // System programs first (sshd, tmux, ripgrep, …): installed as root, else the one command is printed (exit 2).
  // In this process, not a separate npm step, so SIGTERM to `npm run demo` reaches the code that stops the children.
  const ready = preflight('demo');
  if (ready !== 0) process.exit(ready);
  console.log('building the VSIX…');
  const vsix = buildVsix();
  const entry = ensureCodeServer();
  const base = join(process.env.RFT_DEMO_DIR ?? join(homedir(), '.cache/remote-finetune/demo'));
  const extensionsDir = join(base, 'extensions');
  const userDataDir = join(base, 'user');
  mkdirSync(extensionsDir, { recursive: true });
  installVsix(entry, vsix, extensionsDir, userDataDir);

  // The demo host's "GPU image" Python: CPU torch and the real Hugging Face libraries, for the built-in trainer.
  console.log("preparing the demo host's Python with torch and the Hugging Face libraries (once, then cached)…");
  const python = trainingPython();
  if (stopping) return;

  // The demo host: an OpenSSH server on loopback only, with a key made for this demo, named in an ssh_config.
  const sshd = await startSshd({ env: { RFT_PYTHON: python } });
  stops.push(() => sshd.stop());
  if (stopping) return;
  const sshDir = join(base, 'ssh');
  mkdirSync(sshDir, { recursive: true });
  const client = clientFor(sshd, { alias: DEMO_HOST, knownHostsInConfig: true, dir: sshDir });

  // A copy of examples/, so trying things in the demo never edits the repository.
  // Examples added since an earlier demo are copied in; ones already there are left as the person edited them.
  const ws = join(base, 'workspace');
  mkdirSync(ws, { recursive: true });
  for (const name of readdirSync(join(REPO_ROOT, 'examples'))) {
    if (!existsSync(join(ws, name))) cpSync(join(REPO_ROOT, 'examples', name), join(ws, name), { recursive: true });
  }
  const tiny = join(ws, 'demo-host-builtin-lora', 'tiny-model');
  if (existsSync(join(ws, 'demo-host-builtin-lora')) && !existsSync(join(tiny, 'config.json'))) buildTinyModel(python, tiny);
  const replay = startGpuReplay(ws, REPO_ROOT);
  stops.push(() => Promise.resolve(replay.stop()));
  const settingsPath = join(userDataDir, 'User', 'settings.json');
  const previous = existsSync(settingsPath) ? (JSON.parse(readFileSync(settingsPath, 'utf8')) as Record<string, unknown>) : {};
  const port = Number(process.env.RFT_DEMO_PORT ?? 0) || undefined;
  const cs = await startCodeServer(entry, {
    folder: ws,
    extensionsDir,
    userDataDir,
    ...(port ? { port } : {}),
    // code-server (VS Code for the web) saves after a delay by default; the desktop editor, and a person
    // watching the editor's checks and the unsaved-changes prompts, expect files saved only when they say so.
    settings: { 'files.autoSave': 'off', ...previous, 'remoteFinetune.ssh.configFile': client.sshConfigPath },
  });
  stops.push(() => cs.stop());
  if (stopping) return;
  console.log(
    [
      '',
      `Remote Fine-Tune demo: open ${cs.url}?folder=${encodeURIComponent(ws)}`,
      `  Demo host: "${DEMO_HOST}" (this machine over SSH on 127.0.0.1:${sshd.port}, remote HOME ${sshd.home})`,
      '  Try: open demo-host-builtin-lora/finetune.yaml (the built-in trainer, real LoRA on a tiny model) or',
      '       demo-host-own-script/finetune.yaml (your own script), then "Fine-Tune: Start Training…" → demo-host.',
      `  GPU dashboard: "${REPLAY_FOLDER}/gpu.csv" → "Fine-Tune: Show GPU Dashboard" (its title bar or right-click):`,
      '       a real H200 run, replayed; the demo host itself has no GPU, so its runs show its CPU and memory.',
      '  New to it? "Fine-Tune: Get Started: Your First Run" opens the walkthrough.',
      '  Ctrl+C stops code-server and the demo host.',
    ].join('\n'),
  );
  await new Promise(() => undefined);
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
