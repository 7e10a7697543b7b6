// "Fine-Tune: Show Cloud GPU Offers": every configured cloud's offers for a GPU, launchable first and
// cheapest per GPU-hour, each with its price per hour and what a run of the chosen length would cost.
// It only reads; launching is Start Training's job.
import { registerCommand } from '../commands';
import * as vscode from 'vscode';
import { showQuickPick, withProgress } from '../linkSafeUi';
import { showWarningMessage } from '../notify';
import { offerLabel } from '../../core/providers/offerLabel';
import { sortOffers } from '../../core/providers/offers';
import type { Offer } from '../../core/providers/provider';
import type { CloudProviders } from './cloudProviders';

export const SHOW_OFFERS_COMMAND = 'remoteFinetune.showCloudOffers';
const GPUS = ['T4', 'L4', 'A10G', 'A10', 'V100', 'A100', 'A100-80GB', 'H100'];

export function registerShowOffersCommand(cloud: CloudProviders, refuseUntrusted: () => boolean, log: vscode.LogOutputChannel): vscode.Disposable {
  return registerCommand(log, SHOW_OFFERS_COMMAND, async (args?: { gpu?: string; hours?: number }): Promise<number> => {
    if (refuseUntrusted()) return 0;
    const gpu = args?.gpu ?? (await showQuickPick(GPUS, { title: 'Cloud GPU offers: which GPU?' }));
    if (!gpu) return 0;
    const hoursText =
      args?.hours !== undefined
        ? String(args.hours)
        : await vscode.window.showInputBox({
            title: 'Planned training time (hours)',
            value: '2',
            validateInput: (v) => (Number(v) > 0 ? undefined : 'A positive number of hours'),
          });
    const hours = Number(hoursText);
    if (!(hours > 0)) return 0;
    const found = await cloud.cloudProviders();
    const providers = found.providers;
    const problems = [...found.problems];
    const offers: Offer[] = [];
    await withProgress({ location: vscode.ProgressLocation.Notification, title: `Fetching ${gpu} offers…`, cancellable: true }, async (_p, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      await Promise.all(
        providers.map(async (p) => {
          try {
            offers.push(...(await p.listOffers({ gpu }, ac.signal)));
          } catch (err) {
            problems.push(`${p.kind}: ${(err as Error).message}`);
          }
        }),
      );
    });
    for (const p of problems) log.info(`offers: ${p}`);
    if (offers.length === 0) {
      void showWarningMessage(`No ${gpu} offers.${problems.length ? ` ${problems.join('; ')}` : ''}`);
      return 0;
    }
    const sorted = sortOffers(offers);
    void showQuickPick(
      sorted.map((o) => offerLabel(o, hours)),
      {
        title: `${gpu} offers, cheapest launchable first (prices: Lambda live, EC2 spot live, others list prices)`,
        matchOnDescription: true,
        matchOnDetail: true,
      },
    );
    return sorted.length;
  });
}
