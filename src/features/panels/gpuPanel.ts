// Host of "Fine-Tune: Show GPU Dashboard".
import type * as vscode from 'vscode';
import type { GpuFromWebview, GpuToWebview } from '../../protocol/gpu';
import { gpuFromWebview } from './messages';
import type { PanelKind } from './panelHost';
import { RunPanelHost } from './runPanel';
import type { PanelServices } from './runPanel';
import type { RunDataSource } from './runDataSource';
import { RUN_FILES } from '../../core/runs/store/runFolder';

export const GPU_PANEL: PanelKind = { viewType: 'remoteFinetune.gpuPanel', bundle: 'gpu', title: 'GPU Dashboard' };

/** Samples per message: a long replay goes in a few posts rather than one huge one. */
const BATCH = 2000;

export class GpuPanelHost extends RunPanelHost<GpuFromWebview, GpuToWebview> {
  constructor(panel: vscode.WebviewPanel, services: PanelServices) {
    super(panel, GPU_PANEL, gpuFromWebview, services, RUN_FILES.gpu);
  }

  protected override attach(source: RunDataSource): void {
    this.post({ type: 'init', title: `GPUs of ${source.label}`, host: source.host });
    this.subscribe(
      source.onHostState((state) => this.post({ type: 'hostState', state })),
      source.onGpuSamples((samples) => this.sendBatches(samples, (batch) => ({ type: 'samples', samples: batch }))),
      source.onHostSamples((samples) => this.sendBatches(samples, (batch) => ({ type: 'hostSamples', samples: batch }))),
      source.onGpuProcesses((processes) => this.post({ type: 'processes', processes })),
    );
  }

  private sendBatches<T>(samples: readonly T[], message: (batch: readonly T[]) => GpuToWebview): void {
    for (let i = 0; i < samples.length; i += BATCH) this.post(message(samples.slice(i, i + BATCH)));
  }

  protected override async onMessage(m: GpuFromWebview): Promise<void> {
    if (m.type === 'action') await this.runAction(m);
  }
}
