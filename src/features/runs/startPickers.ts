// Start Training's pickers: the run spec, the GPU (the spec's highlighted), and where the run goes — SSH hosts
// with their probed GPUs, then cloud offers cheapest first as they arrive, then rows that set up a cloud.
import * as vscode from 'vscode';
import { setting } from '../settings';
import { createQuickPick, showQuickPick } from '../linkSafeUi';
import { showErrorMessage } from '../notify';
import type { TargetChoice, TargetSources } from './targets';
import { gpuMatches, probedGpuNames } from '../../core/hosts/gpuCheck';
import { gpuSummary, sourcesText } from '../../core/hosts/hostSources';
import { setupRows } from '../../core/runs/hosts/targetFixes';
import type { GcpSetupState, TargetFix } from '../../core/runs/hosts/targetFixes';
import { resolveCloudSettings } from '../../core/providers/providerSelection';
import { applicationDefaultCredentialsPresent } from '../../core/providers/gcp/auth';
import { cloudOf, offersForTarget } from '../../core/runs/hosts/targetOffers';
import type { RunPlan } from '../../core/runs/lifecycle/runPlan';
import { GPU_IDS } from '../../core/gpu/catalog';

export async function pickSpec(arg: unknown): Promise<vscode.Uri | undefined> {
  if (arg instanceof vscode.Uri) return arg;
  const active = vscode.window.activeTextEditor?.document;
  if (active && /finetune[^/\\]*\.ya?ml$/i.test(active.fileName)) return active.uri;
  const found = await vscode.workspace.findFiles('**/finetune*.{yaml,yml}', '**/{node_modules,.git}/**', 200);
  if (found.length === 1) return found[0];
  if (found.length === 0) {
    void showErrorMessage('No run spec (finetune.yaml) in this workspace. Open one, or copy one from the examples.');
    return undefined;
  }
  const pick = await showQuickPick(
    found.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })),
    { title: 'Which run spec?' },
  );
  return pick?.uri;
}

/** The GPU picker with the spec's GPU highlighted, so Enter keeps it (showQuickPick's `picked` only works with canPickMany). */
export async function pickGpu(current: string | undefined): Promise<string | undefined> {
  const qp = createQuickPick<vscode.QuickPickItem>();
  qp.title = 'Which GPU?';
  qp.items = GPU_IDS.map((g) => ({ label: g, ...(g === current ? { description: 'in the spec' } : {}) }));
  const inSpec = qp.items.find((i) => i.label === current);
  if (inSpec) qp.activeItems = [inSpec];
  const picked = await new Promise<string | undefined>((resolve) => {
    qp.onDidAccept(() => {
      resolve(qp.selectedItems[0]?.label);
      qp.hide();
    });
    qp.onDidHide(() => resolve(undefined));
    qp.show();
  });
  qp.dispose();
  return picked;
}

interface TargetItem extends vscode.QuickPickItem {
  readonly choice?: TargetChoice;
  /** Not a target: adds a host, or sets a cloud's missing credential; the picker comes back after. */
  readonly action?: { readonly kind: 'addHost' } | { readonly kind: 'fix'; readonly fix: TargetFix };
}

export type TargetPick = TargetChoice | NonNullable<TargetItem['action']>;

const ADD_SSH_HOST_LABEL = '$(add) Add SSH host…';

export async function pickTarget(
  plan: RunPlan,
  gpus: readonly string[],
  sources: TargetSources,
  fitText: string,
  activeHost?: string,
): Promise<TargetPick | undefined> {
  const qp = createQuickPick<TargetItem>();
  qp.title = `Where should ${plan.name} run? — ${fitText}`;
  qp.placeholder = 'An SSH host you have, or a new instance (cheapest first)';
  qp.matchOnDescription = true;
  qp.matchOnDetail = true;
  qp.busy = true;
  const items: TargetItem[] = [];
  const specHost = plan.target.provider === 'ssh' || plan.target.provider === 'local' ? plan.target.host : undefined;
  // Whatever the spec's provider: the person's own hosts (saved, ssh_config, past runs) are always a choice.
  const hosts = sources.sshHosts(typeof specHost === 'string' ? specHost : undefined, gpus);
  items.push({ label: 'SSH hosts', kind: vscode.QuickPickItemKind.Separator });
  for (const h of hosts) {
    const names = h.probe ? probedGpuNames(h.probe.probe) : undefined;
    const match = names?.some((g) => gpus.some((want) => gpuMatches(g, want)));
    items.push({
      label: `$(server) ${h.host}`,
      description: `${gpuSummary(h)} · ${sourcesText(h.sources)}`,
      ...(names && !match ? { detail: names.length > 0 ? `has no ${gpus.join('/')}` : 'no NVIDIA GPU found when last probed' } : {}),
      choice: { kind: 'ssh', host: h.host, ...(names ? { gpus: names } : {}) },
    });
  }
  items.push({ label: ADD_SSH_HOST_LABEL, description: 'from ~/.ssh/config or user@host[:port]', alwaysShow: true, action: { kind: 'addHost' } });
  qp.items = items;
  const active = items.find((i) => i.choice?.kind === 'ssh' && i.choice.host === activeHost);
  if (active) qp.activeItems = [active];
  qp.show();
  // The spec's target decides which clouds, where, what type and how many GPUs are offered.
  const target = plan.target;
  const cloud = sources.cloudProviders(target).then(
    async ({ providers, problems }) => {
      const { offers, problems: more } = await offersForTarget(providers, gpus, target);
      const all = [...items];
      if (offers.length > 0) all.push({ label: 'New instance (price per hour, cheapest first)', kind: vscode.QuickPickItemKind.Separator });
      for (const { provider, offer } of offers) {
        all.push({
          label: `$(cloud) ${provider.kind} ${offer.instanceType}`,
          description: `$${offer.pricePerHour.toFixed(2)}/h · ${offer.gpuCount}× ${offer.gpu} · ${offer.region}${offer.zone ? `/${offer.zone}` : ''}${offer.spot ? ' · spot' : ''}`,
          detail: offer.capacity === 'available' ? 'capacity now' : offer.capacity === 'unavailable' ? 'no capacity now' : 'capacity unknown until launch',
          choice: { kind: 'cloud', provider, offer },
        });
      }
      const { fixes, notes } = setupRows([...problems, ...more], cloudOf(target), gcpSetupState());
      if (fixes.length > 0) all.push({ label: 'Clouds to set up', kind: vscode.QuickPickItemKind.Separator });
      for (const fix of fixes) all.push({ label: `$(key) ${fix.label}`, detail: fix.detail, alwaysShow: true, action: { kind: 'fix', fix: fix.fix } });
      for (const p of notes) all.push({ label: `$(warning) ${p}`, alwaysShow: true });
      const keep = qp.activeItems[0];
      qp.items = all;
      if (keep && all.includes(keep)) qp.activeItems = [keep];
      qp.busy = false;
    },
    () => {
      qp.busy = false;
    },
  );
  const picked = await new Promise<TargetPick | undefined>((resolve) => {
    qp.onDidAccept(() => {
      const item = qp.selectedItems[0] ?? qp.activeItems[0];
      const c = item?.choice ?? item?.action;
      if (c) {
        resolve(c);
        qp.hide();
      }
    });
    qp.onDidHide(() => resolve(undefined));
  });
  void cloud;
  qp.dispose();
  return picked;
}

/** GCP's two settings, each its own setup row: the project (settings or environment) and the sign-in. */
function gcpSetupState(): GcpSetupState {
  const project = resolveCloudSettings({ gcpProject: setting('gcp.project') }).gcpProject !== undefined;
  return { project, credentials: applicationDefaultCredentialsPresent() };
}
