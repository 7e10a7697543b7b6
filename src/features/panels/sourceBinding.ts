// Which run a panel shows, and whether the panel owns (and so disposes) that data source.
import * as vscode from 'vscode';
import { basename, dirname } from 'node:path';
import type { SourceDescriptor } from '../../protocol/common';
import type { EmptyStateMessage, PanelAction } from '../../protocol/common';
import type { RunContext, RunDataSource } from './runDataSource';
import { LocalRunDataSource, runFilesNear } from './localRunSource';

export interface SourceBinding {
  readonly descriptor: SourceDescriptor;
  readonly source: RunDataSource | undefined;
  /** Local sources belong to the panel; an active run's source belongs to the run lifecycle. */
  readonly owned: boolean;
}

export async function bindSource(descriptor: SourceDescriptor, runContext: RunContext | undefined): Promise<SourceBinding> {
  if (descriptor.kind === 'local') {
    // Named after the file the person opened, though its run folder's other files are tailed too.
    const label = `${basename(dirname(descriptor.path))}/${basename(descriptor.path)}`;
    const src = await new LocalRunDataSource(runFilesNear(descriptor.path), { label }).start();
    return { descriptor, source: src, owned: true };
  }
  return { descriptor, source: runContext?.activeRun(), owned: false };
}

export function releaseSource(b: SourceBinding | undefined): void {
  if (b?.owned) b.source?.dispose();
}

/** "Fine-Tune: Start Training" (package.json), offered when the run feature registered it. */
const START_COMMAND = 'remoteFinetune.startTraining';

async function startRegistered(): Promise<boolean> {
  return (await vscode.commands.getCommands(true)).includes(START_COMMAND);
}

export async function emptyState(what: string): Promise<EmptyStateMessage> {
  const actions: PanelAction[] = [{ id: 'openLocalFile', label: `Open a local ${what}…` }];
  if (await startRegistered()) actions.unshift({ id: 'startRun', label: 'Start a run…' });
  return {
    type: 'empty',
    message: `No active run. Start one with "Fine-Tune: Start Training", or open a run's ${what} from this machine.`,
    actions,
  };
}

export async function startRunCommand(): Promise<void> {
  if (await startRegistered()) await vscode.commands.executeCommand(START_COMMAND);
}

export async function pickLocalFile(kind: 'log' | 'gpu' | 'metrics'): Promise<string | undefined> {
  const filters: Record<string, string[]> =
    kind === 'log'
      ? { 'Run log': ['log', 'txt', 'out'], 'All files': ['*'] }
      : kind === 'gpu'
        ? { 'GPU samples': ['csv'], 'All files': ['*'] }
        : { 'Run events': ['jsonl'], 'All files': ['*'] };
  const picked = await vscode.window.showOpenDialog({
    canSelectMany: false,
    openLabel: 'Open',
    title: kind === 'log' ? 'Open a run log (output.log)' : kind === 'gpu' ? 'Open GPU samples (gpu.csv)' : 'Open run events (events.jsonl)',
    filters,
  });
  return picked?.[0]?.fsPath;
}
