// The extension's side of provider selection: reads the settings and the Lambda API key in SecretStorage
// and hands them, as plain values, to core's policy (core/providers/providerSelection.ts), which the CLI
// uses too. Nothing here connects; providers reach their cloud only when asked for offers or instances.
import type * as vscode from 'vscode';
import { setting } from '../settings';
import { join } from 'node:path';
import { lazyApplicationDefaultCredentials } from '../../core/providers/gcp/auth';
import { createProviderSelection, resolveCloudSettings } from '../../core/providers/providerSelection';
import type { CloudSettings } from '../../core/providers/providerSelection';
import type { Provider, ProviderKind } from '../../core/providers/provider';
import type { TargetSpec } from '../../core/providers/targetSpec';
import { Ledger } from '../../core/runs/store/ledger';

export const LAMBDA_KEY_SECRET = 'remoteFinetune.lambda.apiKey';

export interface CloudProviders extends vscode.Disposable {
  readonly ledger: Ledger;
  /**
   * Providers with credentials now, for offers; a missing one comes with its reason. A run spec's target
   * chooses the EC2 region and the GCP zone (a provider per region/zone), else the settings do.
   */
  cloudProviders(target?: Partial<TargetSpec>): Promise<{ readonly providers: readonly Provider[]; readonly problems: readonly string[] }>;
  /** The provider that owns a run's instance (by its provider and region), for teardown and monitoring. */
  providerFor(record: { readonly provider: ProviderKind; readonly region?: string }): Provider | undefined;
  /** One provider per cloud and region the ledger has instances in, plus the configured ones. */
  reconcileProviders(): Promise<Provider[]>;
  lambdaKey(): Promise<string | undefined>;
}

function settings(key: string | undefined): CloudSettings {
  return resolveCloudSettings({
    lambdaApiKey: key,
    // remoteFinetune.lambda.apiUrl: a proxy in front of Lambda's API, or (in the end-to-end test) its emulator.
    lambdaApiUrl: setting('lambda.apiUrl'),
    awsRegion: setting('aws.region'),
    gcpProject: setting('gcp.project'),
    gcpZone: setting('gcp.zone'),
    sshPort: setting('cloud.sshPort'),
  });
}

/** One set per extension host (the composition root builds it), shared by the orphan sweep and the run lifecycle. */
export function createCloudProviders(context: vscode.ExtensionContext): CloudProviders {
  const ledger = new Ledger(join(context.globalStorageUri.fsPath, 'instances.json'));
  let key: string | undefined;
  let keyLoaded: Promise<void> = Promise.resolve(context.secrets.get(LAMBDA_KEY_SECRET)).then(
    (k) => {
      key = k;
    },
    () => undefined,
  );
  const sub = context.secrets.onDidChange((e) => {
    if (e.key === LAMBDA_KEY_SECRET)
      keyLoaded = Promise.resolve(context.secrets.get(LAMBDA_KEY_SECRET)).then(
        (k) => {
          key = k;
        },
        () => undefined,
      );
  });
  const selection = createProviderSelection(lazyApplicationDefaultCredentials());

  return {
    ledger,
    lambdaKey: async () => {
      await keyLoaded;
      return key;
    },
    async cloudProviders(target) {
      await keyLoaded;
      return selection.offerProviders(settings(key), target);
    },
    providerFor: (record) => selection.providerFor(settings(key), record),
    async reconcileProviders() {
      await keyLoaded;
      return selection.reconcileProviders(settings(key), await ledger.entries());
    },
    dispose: () => sub.dispose(),
  };
}
