import type * as vscode from 'vscode';
import type { ConnectOptions } from '../core/ssh/session';
import type { RunContext } from './panels/runDataSource';

/** What every feature's registerX receives from the composition root. */
export interface FeatureDeps {
  readonly context: vscode.ExtensionContext;
  readonly log: vscode.LogOutputChannel;
  /** Options of every SSH connection (prompts, host-key store, ssh_config), built once by the composition root. */
  readonly connectOptions: ConnectOptions;
  /** The run the live panels follow; absent until the run lifecycle provides one. */
  readonly runContext?: RunContext;
}
