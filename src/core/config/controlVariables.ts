// Variables a workspace may not set for a run: the ones that decide which interpreter, which code or which shared
// objects run on the GPU host, and the runner's own RFT_* settings (RFT_POWEROFF_CMD is the idle watchdog's
// power-off command). A cloned repository's .env would otherwise run its code in place of the runner's, with the
// user's tokens in its environment. The .env check flags them (RFT610), a run whose environment holds one is
// refused before anything starts (core/runs/lifecycle/runStart.ts), and the runner drops any the env file still carries
// (python-runner/remote_finetune/control_env.py, the same list).
import type { ConfigDiagnostic } from './types';

const INTERPRETER: Readonly<Record<string, string>> = {
  PYTHONSAFEPATH: 'decides whether Python puts the working folder (the synced workspace) first on the module path',
  PYTHONHOME: 'chooses which Python standard library runs',
  PYTHONSTARTUP: 'names a file Python runs at start',
  PYTHONINSPECT: 'turns a finished script into an interactive Python',
  PYTHONEXECUTABLE: 'changes what Python reports as its own interpreter',
  PYTHONUSERBASE: 'chooses the user site-packages folder, whose .pth files run at every Python start',
  PYTHONPLATLIBDIR: 'chooses where Python looks for its own library',
  LD_PRELOAD: 'loads a shared library into every program the run starts',
  LD_AUDIT: 'loads a shared library into every program the run starts',
  BASH_ENV: 'names a file bash runs before every script',
  PATH: 'decides which python, accelerate and torchrun the run starts',
};

export const CONTROL_VARIABLES: readonly string[] = Object.keys(INTERPRETER);

/** The runner's own settings; the extension itself writes some of them into the env file, after this check. */
const RUNNER_PREFIX = 'RFT_';

export function isControlVariable(name: string): boolean {
  return name in INTERPRETER || name.startsWith(RUNNER_PREFIX);
}

/** Why a workspace may not set `name`, in words for the person; undefined for any other variable. */
export function controlReason(name: string): string | undefined {
  if (name in INTERPRETER) return `${name} ${INTERPRETER[name]}`;
  if (name.startsWith(RUNNER_PREFIX)) return `${name} is a Remote Fine-Tune runner setting (such as the idle watchdog's power-off command)`;
  return undefined;
}

/** The control variables an environment sets, in its order. */
export function controlVariablesIn(env: Readonly<Record<string, string>>): string[] {
  return Object.keys(env).filter(isControlVariable);
}

/** The message a refused start gives, or undefined when the environment sets none. */
export function controlVariablesRefusal(env: Readonly<Record<string, string>>): string | undefined {
  const names = controlVariablesIn(env);
  if (names.length === 0) return undefined;
  return (
    `the workspace environment sets ${names.join(', ')}, which ${names.length === 1 ? 'controls' : 'control'} the interpreter or the runner on the ` +
    `GPU host; a run does not start with ${names.length === 1 ? 'it' : 'them'}. Remove ${names.length === 1 ? 'that line' : 'those lines'} ` +
    `from the .env (RFT610), or set ${names.length === 1 ? 'it' : 'them'} on the host itself.`
  );
}

interface EntryAt {
  readonly key: string;
  readonly keyStart: number;
  readonly keyEnd: number;
  readonly lineStart: number;
  readonly lineEnd: number;
}

/** RFT610 on the key of each .env line that sets a control variable, with a fix that removes the line. */
export function controlVariableDiagnostics(entries: readonly EntryAt[]): ConfigDiagnostic[] {
  return entries.flatMap((e) => {
    const why = controlReason(e.key);
    if (!why) return [];
    return [
      {
        start: e.keyStart,
        end: e.keyEnd,
        severity: 'error' as const,
        code: 'RFT610',
        message: `${why}: a workspace may not set it, and Start Training refuses a run whose .env does. Remove the line, or set it on the GPU host itself.`,
        fixes: [{ title: `Remove ${e.key}`, edits: [{ start: e.lineStart, end: e.lineEnd, newText: '' }], preferred: true }],
      },
    ];
  });
}
