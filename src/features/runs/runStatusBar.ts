// The active run in the status bar: step of total and time left, loss, GPU utilisation and cost so far. When it ends it stays a
// while as "finished" (or how it ended) with its last step, loss and length, so a run that ended while the
// person looked elsewhere is still seen. A click opens its panels.
import * as vscode from 'vscode';
import { createStatusBarItem } from '../linkSafeUi';
import type { RunServices } from './runServices';
import { isTerminal } from '../../core/runs/store/runRecord';
import { FINISHED_LINGER_MS, statusBarState } from '../../core/runs/view/runSummary';
import type { GpuSample } from '../../protocol/gpu';

export const OPEN_RUN_PANELS_COMMAND = 'remoteFinetune.openRunPanels';
const PROGRESS_TICK_MS = 15_000;

/** What the item shows, for the host tests (the item itself cannot be read back from VS Code). */
export interface RunStatusBarState {
  readonly visible: boolean;
  readonly text: string;
  readonly tooltip: string;
}

export function registerRunStatusBar(runs: RunServices, lingerMs = FINISHED_LINGER_MS): vscode.Disposable & { state(): RunStatusBarState } {
  const item = createStatusBarItem('remoteFinetune.activeRun', vscode.StatusBarAlignment.Left, 50);
  item.name = 'Fine-Tune: Active Run';
  item.command = OPEN_RUN_PANELS_COMMAND;
  let visible = false;
  let gpuUtil: number | undefined;
  let gpuSub: { dispose(): void } | undefined;
  let followed: string | undefined;
  let expiry: NodeJS.Timeout | undefined;
  const render = (): void => {
    if (expiry) {
      clearTimeout(expiry);
      expiry = undefined;
    }
    const r = runs.panels.activeRecord();
    const shown = r ? statusBarState(r, gpuUtil, Date.now(), lingerMs) : undefined;
    if (!r || !shown) {
      item.hide();
      visible = false;
      return;
    }
    if (isTerminal(r.status)) {
      // Shown as finished until the linger ends, then gone without waiting for another store change.
      const end = Date.parse(r.finishedAt ?? r.updatedAt);
      expiry = setTimeout(render, Math.max(1_000, end + lingerMs - Date.now() + 50));
      expiry.unref?.();
    } else if (followed !== r.id) {
      followed = r.id;
      gpuUtil = undefined;
      gpuSub?.dispose();
      gpuSub = runs.panels.activeRun()?.onGpuSamples((samples: readonly GpuSample[]) => {
        const last = samples[samples.length - 1];
        if (last) {
          const sameTime = samples.filter((s) => s.t === last.t && s.utilizationPct !== null);
          gpuUtil = sameTime.length > 0 ? sameTime.reduce((a, s) => a + (s.utilizationPct ?? 0), 0) / sameTime.length : undefined;
          render();
        }
      });
    }
    item.text = shown.text;
    item.tooltip = shown.tooltip;
    item.show();
    visible = true;
  };
  const sub = runs.store.onDidChange(() => render());
  // The time left counts down between logged steps, which may be minutes apart.
  const tick = setInterval(() => {
    const r = runs.panels.activeRecord();
    if (r && !isTerminal(r.status)) render();
  }, PROGRESS_TICK_MS);
  tick.unref?.();
  render();
  const d = vscode.Disposable.from(item, {
    dispose: () => {
      sub.dispose();
      clearInterval(tick);
      gpuSub?.dispose();
      if (expiry) clearTimeout(expiry);
    },
  });
  return Object.assign(d, {
    state: (): RunStatusBarState => ({ visible, text: String(item.text), tooltip: typeof item.tooltip === 'string' ? item.tooltip : '' }),
  });
}
